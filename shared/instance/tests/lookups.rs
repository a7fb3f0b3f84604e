//! `nodes(explore-resources)` against moto and one local server standing in
//! for Slack's, Airtable's, GitHub's and Discord's APIs (their origins sent
//! there by the executor's origin overrides): each method's request as the
//! service documents it (path, query, auth header, User-Agent), entries
//! mapped to name/value/url, the filter where the service or n8n puts it,
//! the three ways of paging, the service's refusal — and the secret in no
//! answer or error.

use executions::{Executor, ExecutorSettings, HttpPolicy};
use instance::credentials::NewCredentialInput;
use instance::nodes::ExploreRequest;
use instance::{Caller, Instance};
use protocol::UserId;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use store::deployment::QueueId;
use store::testing::TestEnv;

const SLACK_TOKEN: &str = "xoxb-lookup-secret-1";
const AIRTABLE_TOKEN: &str = "pat-lookup-secret-2";
const GITHUB_TOKEN: &str = "ghp-lookup-secret-3";
const DISCORD_TOKEN: &str = "discord-lookup-secret-4";

/// (path, query, authorization, user-agent) of every request.
type Seen = Arc<Mutex<Vec<(String, String, String, String)>>>;

async fn services() -> (String, Seen) {
    use axum::extract::RawQuery;
    use axum::http::{HeaderMap, StatusCode, Uri};
    use axum::Json;
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let app = axum::Router::new().fallback(move |uri: Uri, RawQuery(q): RawQuery, h: HeaderMap| {
        let log = log.clone();
        async move {
            let header = |k: &str| h.get(k).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
            let (auth, q) = (header("authorization"), q.unwrap_or_default());
            log.lock().unwrap().push((uri.path().to_owned(), q.clone(), auth.clone(), header("user-agent")));
            let ok = |v: Value| (StatusCode::OK, Json(v));
            match uri.path() {
                "/api/conversations.list" if auth == format!("Bearer {SLACK_TOKEN}") => {
                    if q.contains("cursor=") {
                        ok(json!({"ok": true, "channels": [{"id": "C3", "name": "sales-general"}], "response_metadata": {"next_cursor": ""}}))
                    } else {
                        ok(json!({"ok": true, "channels": [{"id": "C1", "name": "general"}, {"id": "C2", "name": "random"}], "response_metadata": {"next_cursor": "dXNlcjpVMEc5"}}))
                    }
                }
                "/api/conversations.list" | "/api/users.list" => ok(json!({"ok": false, "error": "invalid_auth"})),
                "/v0/meta/bases/appA/tables" => ok(json!({"tables": [{"id": "tbl1", "name": "Leads"}, {"id": "tbl2", "name": "Deals"}]})),
                "/v0/meta/bases" if auth == format!("Bearer {AIRTABLE_TOKEN}") => ok(json!({"bases": [{"id": "appA", "name": "CRM"}, {"id": "appB", "name": "Hiring"}]})),
                "/v0/meta/bases" => (StatusCode::UNAUTHORIZED, Json(json!({"error": {"type": "AUTHENTICATION_REQUIRED", "message": format!("token {} is not valid", auth.trim_start_matches("Bearer "))}}))),
                "/search/users" => ok(json!({"total_count": 25, "items": [{"login": "ada", "html_url": "https://github.com/ada"}, {"login": "adaline", "html_url": "https://github.com/adaline"}]})),
                "/api/v10/guilds/G1/channels" => ok(json!([{"id": "1", "name": "general", "type": 0}, {"id": "2", "name": "Lounge", "type": 2}, {"id": "3", "name": "Team", "type": 4}, {"id": "4", "name": "news", "type": 5}])),
                "/api/v10/guilds/G1/members" => ok(Value::Array((0..100).map(|i| json!({"user": {"id": format!("u{i}"), "username": format!("member{i}")}})).collect())),
                _ => (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"}))),
            }
        }
    });
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    (format!("http://{addr}"), seen)
}

async fn instance(base: &str) -> (TestEnv, Instance) {
    let env = TestEnv::new().await;
    let mut config = env.config.clone();
    config.http_allowed_hosts = vec!["127.0.0.1".into()];
    config.http_allow_private_network = true;
    let mut inst = Instance::new(&env.clients, &config).await.unwrap();
    let settings = ExecutorSettings {
        http: HttpPolicy::from_config(&config),
        origin_overrides: ["https://slack.com", "https://api.airtable.com", "https://api.github.com", "https://discord.com"].iter().map(|o| ((*o).to_owned(), base.to_owned())).collect(),
        ..ExecutorSettings::default()
    };
    inst.executor = Executor::new(inst.data.clone(), env.clients.sqs.clone(), config.queue_url(QueueId::Runs).unwrap(), settings);
    // lookups run here (the queue path: tests/credentials.rs)
    inst.run_in_process();
    (env, inst)
}

fn someone(name: &str) -> Caller {
    Caller::new(UserId(format!("{name}-{}", uuid::Uuid::new_v4().simple())))
}

async fn credential(inst: &Instance, caller: &Caller, kind: &str, data: Value) -> String {
    inst.create_credential(caller, NewCredentialInput { name: format!("My {kind}"), kind: kind.into(), data, description: None, project_id: None }).await.unwrap().id
}

fn req(node: &str, method: &str, kind: &str, id: &str, extra: Value) -> ExploreRequest {
    let mut v = json!({"nodeType": node, "version": 2, "methodName": method, "methodType": "listSearch", "credentialType": kind, "credentialId": id});
    v.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
    serde_json::from_value(v).unwrap()
}

fn names(found: &instance::lookups::Explored) -> Vec<&str> {
    found.results.iter().map(|r| r.name.as_str()).collect()
}

#[tokio::test]
async fn lookups_ask_the_service_with_the_credential_and_map_its_entries() {
    let (base, seen) = services().await;
    let (_env, inst) = instance(&base).await;
    let alice = someone("alice");
    inst.user(&alice).await.unwrap();
    let slack = credential(&inst, &alice, "slackApi", json!({"accessToken": SLACK_TOKEN})).await;
    let airtable = credential(&inst, &alice, "airtableTokenApi", json!({"accessToken": AIRTABLE_TOKEN})).await;
    let github = credential(&inst, &alice, "githubApi", json!({"accessToken": GITHUB_TOKEN, "user": "alice"})).await;
    let discord = credential(&inst, &alice, "discordBotApi", json!({"botToken": DISCORD_TOKEN})).await;
    let mut answers = String::new();

    // Slack channels: the cursor pages, the filter is applied here (as n8n's method does).
    let first = inst.explore_resources(&alice, &req("n8n-nodes-base.slack", "getChannels", "slackApi", &slack, json!({}))).await.unwrap();
    assert_eq!(names(&first), ["general", "random"]);
    assert_eq!(first.results[0].value, json!("C1"));
    assert_eq!(first.pagination_token.as_deref(), Some("dXNlcjpVMEc5"));
    let next = inst.explore_resources(&alice, &req("n8n-nodes-base.slack", "getChannels", "slackApi", &slack, json!({"paginationToken": "dXNlcjpVMEc5"}))).await.unwrap();
    assert_eq!((names(&next), next.pagination_token.as_deref()), (vec!["sales-general"], None));
    let filtered = inst.explore_resources(&alice, &req("n8n-nodes-base.slack", "getChannels", "slackApi", &slack, json!({"filter": "GEN"}))).await.unwrap();
    assert_eq!(names(&filtered), ["general"]);
    let (path, query, auth, _) = seen.lock().unwrap()[0].clone();
    assert_eq!((path.as_str(), auth), ("/api/conversations.list", format!("Bearer {SLACK_TOKEN}")));
    assert!(query.contains("types=public_channel%2Cprivate_channel") && query.contains("limit=200") && !query.contains("cursor"), "{query}");
    assert!(seen.lock().unwrap()[1].1.contains("cursor=dXNlcjpVMEc5"));
    answers.push_str(&format!("{first:?}{next:?}"));

    // Slack's refusal comes as a 200 with ok: false.
    let other = credential(&inst, &alice, "slackApi", json!({"accessToken": "xoxb-revoked"})).await;
    let e = inst.explore_resources(&alice, &req("n8n-nodes-base.slack", "getUsers", "slackApi", &other, json!({}))).await.unwrap_err();
    assert!(e.message().contains("invalid_auth"), "{e}");

    // Airtable: tables need the base (a resource locator's value) and link to it.
    let e = inst.explore_resources(&alice, &req("n8n-nodes-base.airtable", "tableSearch", "airtableTokenApi", &airtable, json!({}))).await.unwrap_err();
    assert!(e.message().contains("\"base\"") && e.message().contains("currentNodeParameters"), "{e}");
    let tables = inst
        .explore_resources(&alice, &req("n8n-nodes-base.airtable", "tableSearch", "airtableTokenApi", &airtable, json!({"currentNodeParameters": {"base": {"__rl": true, "mode": "list", "value": "appA"}}, "filter": "lead"})))
        .await
        .unwrap();
    assert_eq!(tables.results, vec![instance::lookups::Found { name: "Leads".into(), value: json!("tbl1"), url: Some("https://airtable.com/appA/tbl1".into()) }]);
    let bases = inst.explore_resources(&alice, &req("n8n-nodes-base.airtable", "baseSearch", "airtableTokenApi", &airtable, json!({}))).await.unwrap();
    assert_eq!(names(&bases), ["CRM", "Hiring"]);
    // A refusal that quotes the token: the error names no secret.
    let wrong = credential(&inst, &alice, "airtableTokenApi", json!({"accessToken": "pat-wrong-but-secret"})).await;
    let e = inst.explore_resources(&alice, &req("n8n-nodes-base.airtable", "baseSearch", "airtableTokenApi", &wrong, json!({}))).await.unwrap_err();
    assert!(e.message().contains("401") && !e.message().contains("pat-wrong-but-secret"), "{e}");
    answers.push_str(&e.message());

    // GitHub searches the service: a filter is needed, pages are numbered, the node's User-Agent goes along.
    let e = inst.explore_resources(&alice, &req("n8n-nodes-base.github", "getUsers", "githubApi", &github, json!({}))).await.unwrap_err();
    assert!(e.message().contains("give a filter"), "{e}");
    let users = inst.explore_resources(&alice, &req("n8n-nodes-base.github", "getUsers", "githubApi", &github, json!({"filter": "ada"}))).await.unwrap();
    assert_eq!(names(&users), ["ada", "adaline"], "the service filtered, nothing more here");
    assert_eq!(users.results[0].url.as_deref(), Some("https://github.com/ada"));
    assert_eq!(users.pagination_token.as_deref(), Some("2"), "25 found, 20 a page");
    let (path, query, auth, agent) = seen.lock().unwrap().iter().find(|s| s.0 == "/search/users").cloned().unwrap();
    assert_eq!((path.as_str(), auth.as_str(), agent.as_str()), ("/search/users", format!("token {GITHUB_TOKEN}").as_str(), "n8n"));
    assert!(query.contains("q=ada") && query.contains("page=1") && query.contains("per_page=20"), "{query}");
    let page2 = inst.explore_resources(&alice, &req("n8n-nodes-base.github", "getUsers", "githubApi", &github, json!({"filter": "ada", "paginationToken": "2"}))).await.unwrap();
    assert_eq!(page2.pagination_token, None, "40 ≥ 25");

    // Discord: a top-level array, text channels only; members page after the last id of a full page.
    let channels = inst
        .explore_resources(&alice, &req("n8n-nodes-base.discord", "textChannelSearch", "discordBotApi", &discord, json!({"currentNodeParameters": {"guildId": "G1"}})))
        .await
        .unwrap();
    assert_eq!(names(&channels), ["general", "news"]);
    assert_eq!(channels.results[0].url.as_deref(), Some("https://discord.com/channels/G1/1"));
    let members = inst
        .explore_resources(&alice, &req("n8n-nodes-base.discord", "userSearch", "discordBotApi", &discord, json!({"currentNodeParameters": {"guildId": {"__rl": true, "value": "G1", "mode": "id"}}})))
        .await
        .unwrap();
    assert_eq!((members.results.len(), members.pagination_token.as_deref()), (100, Some("u99")));
    assert!(seen.lock().unwrap().iter().any(|s| s.0 == "/api/v10/guilds/G1/channels" && s.2 == format!("Bot {DISCORD_TOKEN}")));
    answers.push_str(&format!("{channels:?}{members:?}"));

    for secret in [SLACK_TOKEN, AIRTABLE_TOKEN, GITHUB_TOKEN, DISCORD_TOKEN] {
        assert!(!answers.contains(secret), "no answer holds {secret}");
    }
}

#[tokio::test]
async fn lookups_refuse_what_they_cannot_do_before_calling_anyone() {
    let (base, seen) = services().await;
    let (_env, inst) = instance(&base).await;
    let (alice, bob) = (someone("alice"), someone("bob"));
    inst.user(&alice).await.unwrap();
    inst.user(&bob).await.unwrap();
    let slack = credential(&inst, &alice, "slackApi", json!({"accessToken": SLACK_TOKEN})).await;
    let hook = credential(&inst, &alice, "discordWebhookApi", json!({"webhookUri": "https://discord.com/api/webhooks/1/x"})).await;
    let refused = |r: Result<instance::lookups::Explored, instance::InstanceError>| r.unwrap_err().message();

    assert!(refused(inst.explore_resources(&alice, &req("n8n-nodes-base.set", "getChannels", "slackApi", &slack, json!({}))).await).contains("no dynamic resources"));
    let e = refused(inst.explore_resources(&alice, &req("n8n-nodes-base.slack", "getGuilds", "slackApi", &slack, json!({}))).await);
    assert!(e.contains("has no listSearch method \"getGuilds\"") && e.contains("getChannels (listSearch)"), "{e}");
    // Airtable's base search is a listSearch only (Slack's getChannels is both, as in n8n).
    let mut load = req("n8n-nodes-base.airtable", "baseSearch", "slackApi", &slack, json!({}));
    load.method_type = "loadOptions".into();
    assert!(refused(inst.explore_resources(&alice, &load).await).contains("no loadOptions method"));
    let e = refused(inst.explore_resources(&alice, &req("n8n-nodes-base.discord", "guildSearch", "discordWebhookApi", &hook, json!({}))).await);
    assert!(e.contains("discordBotApi"), "a webhook cannot list guilds: {e}");
    // Someone else's credential is not found, and nothing reached the service.
    assert!(refused(inst.explore_resources(&bob, &req("n8n-nodes-base.slack", "getChannels", "slackApi", &slack, json!({}))).await).contains("not found"));
    assert!(seen.lock().unwrap().is_empty(), "{:?}", seen.lock().unwrap());
}
