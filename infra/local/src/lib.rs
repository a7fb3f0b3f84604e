//! The local cloud: makes this machine look like the AWS deployment.
//!
//! Over moto_server (DynamoDB + SQS), one process plays API Gateway (the
//! HTTP API, the streaming Function URL and the WebSocket API with its
//! `@connections` management endpoint), the SQS event source mappings and
//! the schedules. Everything is wired from `store::deployment`, and every
//! event reaches the same handler fns the Lambda binaries run, in the same
//! Lambda event shapes.

pub mod cli;
pub mod dispatch;
pub mod http_api;
pub mod metering;
pub mod routing;
pub mod sam_template;
pub mod scheduler;
pub mod sqs_source;
pub mod websocket;

use api::App;
use std::net::SocketAddr;
use std::sync::Arc;
use store::config::Config;
use store::deployment::{TableId, QUEUES};
use store::{ApiKeys, AwsClients};
use tokio::sync::watch;

#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error(transparent)]
    Config(#[from] store::config::ConfigError),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
}

/// How to start the local cloud.
#[derive(Debug, Clone)]
pub struct Options {
    pub config: Config,
    /// Prefix of every table and queue name (`ia` → `ia-events`, ...).
    pub prefix: String,
    /// 0 picks a free port (tests).
    pub port: u16,
    /// Poll the SQS queues into their consumers.
    pub run_consumers: bool,
    /// Run scheduled functions (the sweep).
    pub run_schedules: bool,
}

/// A running local cloud; dropping it does not stop it, [`Running::shutdown`] does.
pub struct Running {
    pub addr: SocketAddr,
    pub app: Arc<App>,
    /// What this cloud's work would be billed by (Lambda, API Gateway).
    pub meter: Arc<metering::Meter>,
    /// Keys created from `INSTANCE_AI_BOOTSTRAP_KEYS` (or one generated key).
    pub keys: Vec<(String, String)>,
    shutdown: watch::Sender<bool>,
    server: tokio::task::JoinHandle<()>,
}

impl Running {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn ws_url(&self) -> String {
        format!("ws://{}/ws", self.addr)
    }

    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.server.await;
    }
}

/// Provisions tables and queues, seeds keys, and serves everything.
pub async fn start(options: Options) -> Result<Running, LocalError> {
    let addr = SocketAddr::from(([127, 0, 0, 1], options.port));
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|source| LocalError::Bind { addr, source })?;
    let addr = listener.local_addr().map_err(|source| LocalError::Bind { addr, source })?;

    let mut config = options.config.clone();
    config.ws_management_url = Some(format!("http://{addr}"));
    // The events function subscribes here, as a browser would.
    config.ws_api_url = Some(format!("ws://{addr}/ws"));
    // Webhook, form and resume URLs are served here.
    if config.public_url.is_none() {
        config.public_url = Some(format!("http://{addr}"));
    }
    let clients = AwsClients::new(&config);
    store::provision::provision(&clients, &mut config, &options.prefix).await?;
    // The sweep's schedule, on until the sweep finds nothing to watch.
    let sweep = store::provision::local_name(&options.prefix, "sweep");
    store::sweep_schedule::SweepSchedule::new(clients.scheduler.clone(), &sweep)
        .provision(&format!("arn:aws:lambda:{}:123456789012:function:{sweep}", config.region), &format!("arn:aws:iam::123456789012:role/{sweep}"))
        .await?;
    config.set_var(store::sweep_schedule::VARIABLE, sweep);
    let keys = seed_keys(&clients, &config).await?;
    let app = Arc::new(App::new(config, clients));

    let (shutdown, shutdown_rx) = watch::channel(false);
    let connections = websocket::Registry::default();
    let meter = Arc::new(metering::Meter::default());
    let router = http_api::router(app.clone(), connections.clone(), meter.clone());

    if options.run_consumers {
        for queue in QUEUES {
            let source = sqs_source::EventSource::for_queue(&app, queue).await?;
            let handler = dispatch::sqs_handler(app.clone(), meter.clone(), queue.consumer);
            tokio::spawn(sqs_source::run(app.clients.sqs.clone(), source, handler, shutdown_rx.clone()));
        }
    }
    if options.run_schedules {
        scheduler::spawn_all(app.clone(), meter.clone(), shutdown_rx.clone());
    }

    let mut stop = shutdown_rx.clone();
    let server = tokio::spawn(async move {
        let serve = axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>())
            .with_graceful_shutdown(async move {
                let _ = stop.wait_for(|s| *s).await;
            });
        if let Err(e) = serve.await {
            tracing::error!(error = %e, "local cloud server stopped");
        }
    });
    Ok(Running { addr, app, meter, keys, shutdown, server })
}

/// Seeds `INSTANCE_AI_BOOTSTRAP_KEYS`; with none configured, creates one key
/// for the user `local` so a fresh machine has a usable key.
async fn seed_keys(clients: &AwsClients, config: &Config) -> Result<Vec<(String, String)>, LocalError> {
    let keys = ApiKeys::new(clients.dynamo.clone(), config.table(TableId::ApiKeys)?);
    if config.bootstrap_keys.is_empty() {
        let key = keys.create(&"local".into(), "generated by the local cloud").await?;
        return Ok(vec![("local".into(), key)]);
    }
    for (user, key) in &config.bootstrap_keys {
        keys.put(&user.as_str().into(), key, "bootstrap").await?;
    }
    Ok(config.bootstrap_keys.clone())
}
