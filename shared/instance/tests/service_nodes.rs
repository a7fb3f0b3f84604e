//! Issue 19's first end to end: n8n workflow JSON "Schedule → HTTP GET
//! weather → Set → Slack post message", exactly as n8n exports it, validates
//! clean and runs on the engine against local stand-ins for the weather API
//! and Slack's Web API (their origins sent there by `origin_overrides`).

use std::sync::{Arc, Mutex};

use engine::host::CredentialsProvider;
use engine::{Engine, EngineSettings, ExecutionStatus, Graph, Host, RunOptions};
use serde_json::{json, Value};

const WORKFLOW: &str = r#"{
  "name": "Weather to Slack",
  "nodes": [
    {"parameters": {"rule": {"interval": [{"field": "hours", "triggerAtMinute": 5}]}}, "id": "3f1c2a9e-0b7d-4c55-9a61-1d2e3f4a5b6c", "name": "Schedule Trigger", "type": "n8n-nodes-base.scheduleTrigger", "typeVersion": 1.2, "position": [0, 0]},
    {"parameters": {"url": "https://api.open-meteo.com/v1/forecast", "sendQuery": true, "queryParameters": {"parameters": [{"name": "latitude", "value": "52.52"}, {"name": "longitude", "value": "13.41"}, {"name": "current", "value": "temperature_2m,wind_speed_10m"}]}, "options": {}}, "id": "8a0e4c1b-2d3f-4e5a-8b6c-7d8e9f0a1b2c", "name": "Get Weather", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [220, 0]},
    {"parameters": {"assignments": {"assignments": [{"id": "b1f2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d", "name": "summary", "value": "=Berlin now: {{ $json.current.temperature_2m }} °C, wind {{ $json.current.wind_speed_10m }} km/h", "type": "string"}]}, "options": {}}, "id": "c2d3e4f5-a6b7-4c8d-9e0f-1a2b3c4d5e6f", "name": "Summarize", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [440, 0]},
    {"parameters": {"select": "channel", "channelId": {"__rl": true, "value": "C05WEATHER", "mode": "list", "cachedResultName": "weather"}, "text": "={{ $json.summary }}", "otherOptions": {"includeLinkToWorkflow": false}}, "id": "d3e4f5a6-b7c8-4d9e-8f0a-2b3c4d5e6f7a", "name": "Post to Slack", "type": "n8n-nodes-base.slack", "typeVersion": 2.3, "position": [660, 0], "webhookId": "e4f5a6b7-c8d9-4e0f-9a1b-3c4d5e6f7a8b", "credentials": {"slackApi": {"id": "kX3pQ9rT2vW8yZ1a", "name": "Slack account"}}}
  ],
  "pinData": {},
  "connections": {
    "Schedule Trigger": {"main": [[{"node": "Get Weather", "type": "main", "index": 0}]]},
    "Get Weather": {"main": [[{"node": "Summarize", "type": "main", "index": 0}]]},
    "Summarize": {"main": [[{"node": "Post to Slack", "type": "main", "index": 0}]]}
  },
  "active": false,
  "settings": {"executionOrder": "v1"},
  "versionId": "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
  "meta": {"templateCredsSetupCompleted": true, "instanceId": "1a2b3c4d5e6f"},
  "tags": []
}"#;

type Seen = Arc<Mutex<Vec<(String, String, Value)>>>;

/// Open-Meteo's forecast and Slack's chat.postMessage, as documented.
fn server() -> (String, Seen) {
    use axum::http::{HeaderMap, Uri};
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: axum::body::Bytes| {
                let log = log.clone();
                async move {
                    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
                    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    log.lock().unwrap().push((uri.to_string(), auth.clone(), body.clone()));
                    let answer = match uri.path() {
                        "/v1/forecast" => json!({"latitude": 52.52, "longitude": 13.419998, "current_units": {"temperature_2m": "°C"}, "current": {"time": "2025-01-01T12:00", "temperature_2m": 3.4, "wind_speed_10m": 11.2}}),
                        "/api/chat.postMessage" if auth == "Bearer xoxb-e2e" => {
                            json!({"ok": true, "channel": body["channel"], "ts": "1735732800.000200", "message": {"type": "message", "text": body["text"], "ts": "1735732800.000200"}})
                        }
                        _ => json!({"ok": false, "error": "invalid_auth"}),
                    };
                    axum::Json(answer)
                }
            });
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
    (format!("http://{}", rx.recv().unwrap()), seen)
}

struct Creds;
impl CredentialsProvider for Creds {
    fn get(&self, cred_type: &str, reference: &Value) -> Result<Value, String> {
        assert_eq!((cred_type, reference["id"].as_str()), ("slackApi", Some("kX3pQ9rT2vW8yZ1a")));
        Ok(json!({"accessToken": "xoxb-e2e"}))
    }
}

#[test]
fn schedule_weather_set_slack_imports_validates_and_runs() {
    let wf: Value = serde_json::from_str(WORKFLOW).unwrap();
    let report = instance::validate::validate_with_expressions(&wf);
    assert!(report.findings.is_empty(), "validates clean: {:?}", report.findings);

    let (base, seen) = server();
    let settings = EngineSettings {
        allow_private_network: true,
        origin_overrides: [("https://api.open-meteo.com".to_owned(), base.clone()), ("https://slack.com".to_owned(), base.clone())].into(),
        ..Default::default()
    };
    let engine = Engine::new(settings, Host { credentials: Some(Arc::new(Creds)), ..Default::default() });
    let (st, _) = engine.run(&Graph::from_json(&wf).unwrap(), RunOptions::default()).unwrap();
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].0, "/v1/forecast?latitude=52.52&longitude=13.41&current=temperature_2m%2Cwind_speed_10m");
    assert_eq!(seen[1].0, "/api/chat.postMessage");
    assert_eq!(seen[1].1, "Bearer xoxb-e2e");
    assert_eq!(seen[1].2, json!({"channel": "C05WEATHER", "text": "Berlin now: 3.4 °C, wind 11.2 km/h"}));
    let posted: Vec<Value> = st.node_output("Post to Slack", 0).unwrap().iter().map(|i| Value::clone(&i.json)).collect();
    assert_eq!(
        posted,
        vec![json!({"ok": true, "channel": "C05WEATHER", "message": {"type": "message", "text": "Berlin now: 3.4 °C, wind 11.2 km/h", "ts": "1735732800.000200"}, "message_timestamp": "1735732800.000200"})]
    );
}

/// The other services' nodes as n8n exports them validate clean too.
#[test]
fn n8n_exported_service_nodes_validate_clean() {
    let nodes = json!([
        {"parameters": {}, "name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0]},
        {"parameters": {"chatId": "12345", "text": "={{ $json.summary }}", "additionalFields": {"appendAttribution": false, "parse_mode": "HTML"}}, "name": "Telegram", "type": "n8n-nodes-base.telegram", "typeVersion": 1.2, "position": [200, 0], "webhookId": "0a1b", "credentials": {"telegramApi": {"id": "t1", "name": "Telegram account"}}},
        {"parameters": {"authentication": "webhook", "content": "Deployed", "options": {}}, "name": "Discord", "type": "n8n-nodes-base.discord", "typeVersion": 2, "position": [400, 0], "webhookId": "1b2c", "credentials": {"discordWebhookApi": {"id": "d1", "name": "Discord Webhook account"}}},
        {"parameters": {"resource": "message", "guildId": {"__rl": true, "value": "77", "mode": "list", "cachedResultName": "srv"}, "channelId": {"__rl": true, "value": "55", "mode": "list", "cachedResultName": "general"}, "content": "hi", "options": {}}, "name": "Discord Bot", "type": "n8n-nodes-base.discord", "typeVersion": 2, "position": [600, 0], "webhookId": "2c3d", "credentials": {"discordBotApi": {"id": "d2", "name": "Discord Bot account"}}},
        {"parameters": {"owner": {"__rl": true, "value": "acme", "mode": "list", "cachedResultName": "acme"}, "repository": {"__rl": true, "value": "app", "mode": "list", "cachedResultName": "app"}, "title": "Bug", "body": "x", "labels": [], "assignees": []}, "name": "GitHub", "type": "n8n-nodes-base.github", "typeVersion": 1.1, "position": [800, 0], "credentials": {"githubApi": {"id": "g1", "name": "GitHub account"}}},
        {"parameters": {"operation": "search", "base": {"__rl": true, "value": "appX", "mode": "list", "cachedResultName": "Base"}, "table": {"__rl": true, "value": "tblY", "mode": "list", "cachedResultName": "Tasks"}, "filterByFormula": "{Done} = 0", "options": {}}, "name": "Airtable", "type": "n8n-nodes-base.airtable", "typeVersion": 2.1, "position": [1000, 0], "credentials": {"airtableTokenApi": {"id": "a1", "name": "Airtable account"}}},
        {"parameters": {"resource": "databasePage", "databaseId": {"__rl": true, "value": "d9824bdc-8445-4327-be8b-5b47500af6ce", "mode": "list", "cachedResultName": "Tasks", "cachedResultUrl": "https://www.notion.so/d98248bdc84454327be8b5b47500af6ce"}, "title": "={{ $json.summary }}", "propertiesUi": {"propertyValues": [{"key": "Status|status", "statusValue": "Open"}, {"key": "Due|date", "date": "2025-01-02"}]}, "options": {}}, "name": "Notion", "type": "n8n-nodes-base.notion", "typeVersion": 2.2, "position": [1200, 0], "credentials": {"notionApi": {"id": "n1", "name": "Notion account"}}},
        {"parameters": {"project": {"__rl": true, "value": "10000", "mode": "list", "cachedResultName": "Ops"}, "issueType": {"__rl": true, "value": "10001", "mode": "list", "cachedResultName": "Task"}, "summary": "={{ $json.summary }}", "additionalFields": {"labels": ["weather"], "priority": {"__rl": true, "value": "3", "mode": "list", "cachedResultName": "Medium"}}}, "name": "Jira", "type": "n8n-nodes-base.jira", "typeVersion": 1, "position": [1400, 0], "credentials": {"jiraSoftwareCloudApi": {"id": "j1", "name": "Jira SW Cloud account"}}},
        {"parameters": {"resource": "issueComment", "issueKey": "OPS-1", "comment": "Done", "options": {}}, "name": "Jira Comment", "type": "n8n-nodes-base.jira", "typeVersion": 1, "position": [1400, 200], "credentials": {"jiraSoftwareCloudApi": {"id": "j1", "name": "Jira SW Cloud account"}}},
        {"parameters": {"authentication": "appToken", "email": "={{ $json.email }}", "additionalFields": {"firstName": "Ada", "lifeCycleStage": "lead"}, "options": {}}, "name": "HubSpot", "type": "n8n-nodes-base.hubspot", "typeVersion": 2.1, "position": [1600, 0], "credentials": {"hubspotAppToken": {"id": "h1", "name": "HubSpot App Token account"}}},
        {"parameters": {"authentication": "appToken", "resource": "deal", "stage": "appointmentscheduled", "additionalFields": {"dealName": "Big one", "amount": 1200}}, "name": "HubSpot Deal", "type": "n8n-nodes-base.hubspot", "typeVersion": 2.1, "position": [1600, 200], "credentials": {"hubspotAppToken": {"id": "h1", "name": "HubSpot App Token account"}}},
        {"parameters": {"resource": "customer", "operation": "create", "name": "Ada", "additionalFields": {"email": "ada@example.com", "metadata": {"metadataProperties": [{"key": "plan", "value": "pro"}]}}}, "name": "Stripe", "type": "n8n-nodes-base.stripe", "typeVersion": 1, "position": [1800, 0], "credentials": {"stripeApi": {"id": "s1", "name": "Stripe account"}}},
        {"parameters": {"resource": "chat", "model": "gpt-4o-mini", "prompt": {"messages": [{"role": "system", "content": "Be brief"}, {"content": "={{ $json.summary }}"}]}, "options": {"temperature": 0.2}}, "name": "OpenAI", "type": "n8n-nodes-base.openAi", "typeVersion": 1.1, "position": [2000, 0], "credentials": {"openAiApi": {"id": "o1", "name": "OpenAi account"}}},
        {"parameters": {"resource": "file", "options": {"channelIds": ["C05WEATHER"], "fileName": "report.csv", "initialComment": "Today"}}, "name": "Slack File", "type": "n8n-nodes-base.slack", "typeVersion": 2.3, "position": [2200, 0], "webhookId": "3d4e", "credentials": {"slackApi": {"id": "s2", "name": "Slack account"}}},
        {"parameters": {"resource": "reaction", "channelId": {"__rl": true, "value": "C05WEATHER", "mode": "list", "cachedResultName": "weather"}, "timestamp": "={{ $json.message_timestamp }}", "name": "white_check_mark"}, "name": "Slack Reaction", "type": "n8n-nodes-base.slack", "typeVersion": 2.3, "position": [2200, 200], "webhookId": "4e5f", "credentials": {"slackApi": {"id": "s2", "name": "Slack account"}}},
        {"parameters": {"fromEmail": "bot@example.com", "toEmail": "ops@example.com", "subject": "Weather", "emailFormat": "text", "text": "={{ $json.summary }}", "options": {"attachments": "data"}}, "name": "Send Email", "type": "n8n-nodes-base.emailSend", "typeVersion": 2.1, "position": [2400, 0], "webhookId": "5f6a", "credentials": {"smtp": {"id": "e1", "name": "SMTP account"}}},
        {"parameters": {"schema": {"__rl": true, "value": "public", "mode": "list", "cachedResultName": "public"}, "table": {"__rl": true, "value": "readings", "mode": "list", "cachedResultName": "readings"}, "columns": {"mappingMode": "defineBelow", "value": {"city": "Berlin", "temp": "={{ $json.current.temperature_2m }}"}, "matchingColumns": [], "schema": [{"id": "city", "displayName": "city", "required": false, "defaultMatch": false, "display": true, "type": "string", "canBeUsedToMatch": true}, {"id": "temp", "displayName": "temp", "required": false, "defaultMatch": false, "display": true, "type": "number", "canBeUsedToMatch": true}], "attemptToConvertTypes": false, "convertFieldsToString": false}, "options": {}}, "name": "Postgres", "type": "n8n-nodes-base.postgres", "typeVersion": 2.6, "position": [2600, 0], "credentials": {"postgres": {"id": "p1", "name": "Postgres account"}}},
        {"parameters": {"operation": "executeQuery", "query": "SELECT * FROM readings WHERE city = $1", "options": {"queryReplacement": "Berlin"}}, "name": "Postgres Query", "type": "n8n-nodes-base.postgres", "typeVersion": 2.6, "position": [2600, 200], "credentials": {"postgres": {"id": "p1", "name": "Postgres account"}}},
        {"parameters": {"operation": "select", "table": {"__rl": true, "value": "readings", "mode": "list", "cachedResultName": "readings"}, "limit": 10, "where": {"values": [{"column": "city", "value": "Berlin"}]}, "sort": {"values": [{"column": "id", "direction": "DESC"}]}, "options": {}}, "name": "MySQL", "type": "n8n-nodes-base.mySql", "typeVersion": 2.5, "position": [2800, 0], "credentials": {"mySql": {"id": "m1", "name": "MySQL account"}}}
    ]);
    let names: Vec<String> = nodes.as_array().unwrap().iter().skip(1).map(|n| n["name"].as_str().unwrap().to_owned()).collect();
    let mut connections = json!({"Start": {"main": [[]]}});
    for n in names {
        connections["Start"]["main"][0].as_array_mut().unwrap().push(json!({"node": n, "type": "main", "index": 0}));
    }
    let wf = json!({"name": "Services", "nodes": nodes, "connections": connections, "settings": {"executionOrder": "v1"}});
    let report = instance::validate::validate_with_expressions(&wf);
    assert!(report.findings.is_empty(), "validates clean: {:?}", report.findings);
}

/// nodes(search) / MCP search_nodes find the service nodes by name and by
/// what they are called in passing.
#[test]
fn search_finds_the_service_nodes() {
    for (query, node) in [
        ("notion", "n8n-nodes-base.notion"),
        ("jira", "n8n-nodes-base.jira"),
        ("hubspot", "n8n-nodes-base.hubspot"),
        ("stripe", "n8n-nodes-base.stripe"),
        ("openai", "n8n-nodes-base.openAi"),
        ("send email", "n8n-nodes-base.emailSend"),
        ("smtp", "n8n-nodes-base.emailSend"),
        ("postgres", "n8n-nodes-base.postgres"),
        ("postgresql", "n8n-nodes-base.postgres"),
        ("mysql", "n8n-nodes-base.mySql"),
        ("mariadb", "n8n-nodes-base.mySql"),
        ("slack", "n8n-nodes-base.slack"),
    ] {
        let (hits, _) = instance::nodes::search(Some(query), None, Some(3)).unwrap();
        assert!(hits.iter().any(|h| h.name == node), "{query}: {:?}", hits.iter().map(|h| &h.name).collect::<Vec<_>>());
    }
    let text = instance::catalog::search_text(&["slack".into()]);
    assert!(text.contains("file (get | getAll | upload)") && text.contains("reaction (add | get | remove)") && text.contains("userGroup ("), "{text}");
}
