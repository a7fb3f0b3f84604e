//! The `local-cloud` command line.

use crate::{start, Options};
use store::config::Config;
use store::deployment::TableId;
use store::provision::local_name;
use store::{ApiKeys, AwsClients};

/// Table and queue name prefix of the local stack.
pub fn local_prefix() -> String {
    std::env::var("INSTANCE_AI_LOCAL_PREFIX").ok().filter(|p| !p.is_empty()).unwrap_or_else(|| "ia".into())
}

pub async fn run(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        None | Some("serve") => serve().await,
        Some("create-key") => {
            let user = args.get(1).ok_or("usage: local-cloud create-key <user> [label]")?;
            let label = args.get(2).map(String::as_str).unwrap_or("created with local-cloud create-key");
            create_key(user, label).await
        }
        Some("env") => env().await,
        Some("template") => {
            print!("{}", crate::sam_template::render());
            Ok(())
        }
        Some("help" | "--help" | "-h") => {
            println!("usage: local-cloud [serve | create-key <user> [label] | env | template]");
            Ok(())
        }
        Some(other) => Err(format!("unknown command {other:?}; try `local-cloud help`")),
    }
}

async fn serve() -> Result<(), String> {
    let config = Config::from_env().map_err(|e| e.to_string())?;
    api::logging::init(config.log_json);
    let port = config.port;
    let running = start(Options { config, prefix: local_prefix(), port, run_consumers: true, run_schedules: true })
        .await
        .map_err(|e| e.to_string())?;
    println!("Instance AI local cloud on {}", running.base_url());
    println!("  Web page: {}/ (sign in with an API key below)", running.base_url());
    println!("  WebSocket: {}?token=<api key>", running.ws_url());
    for (user, key) in &running.keys {
        println!("  API key for {user}: {key}");
    }
    if let Some((_, key)) = running.keys.first() {
        println!("  try: curl -H 'Authorization: Bearer {key}' {}/healthz", running.base_url());
    }
    tokio::signal::ctrl_c().await.map_err(|e| e.to_string())?;
    running.shutdown().await;
    Ok(())
}

/// Provisions the local tables and queues and prints, as `NAME=value` lines,
/// the variables that name them (what the template sets in AWS), so a single
/// function binary can be started against the local stack (`measure_init.sh`).
async fn env() -> Result<(), String> {
    let mut config = Config::from_env().map_err(|e| e.to_string())?;
    let clients = AwsClients::new(&config);
    store::provision::provision(&clients, &mut config, &local_prefix()).await.map_err(|e| e.to_string())?;
    for t in store::deployment::TABLES {
        println!("{}={}", t.env, config.table(t.id).map_err(|e| e.to_string())?);
    }
    for q in store::deployment::QUEUES {
        println!("{}={}", q.env, config.queue_url(q.id).map_err(|e| e.to_string())?);
    }
    Ok(())
}

async fn create_key(user: &str, label: &str) -> Result<(), String> {
    if !protocol::ids::is_valid_path_id(user) {
        return Err(format!("invalid user id {user:?}: use 1-128 characters of [A-Za-z0-9_.:-]"));
    }
    let mut config = Config::from_env().map_err(|e| e.to_string())?;
    if config.table(TableId::ApiKeys).is_err() {
        config.set_table(TableId::ApiKeys, local_name(&local_prefix(), TableId::ApiKeys.def().local_suffix));
    }
    let clients = AwsClients::new(&config);
    let table = config.table(TableId::ApiKeys).map_err(|e| e.to_string())?;
    let key = ApiKeys::new(clients.dynamo, table).create(&user.into(), label).await.map_err(|e| e.to_string())?;
    // The only time this key is shown: only its hash is stored.
    println!("{key}");
    Ok(())
}
