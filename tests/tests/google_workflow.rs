//! Issue 19's second workflow end to end, through the local cloud: a person
//! creates Google Sheets and Gmail OAuth2 credentials through the REST API
//! and connects them from the start route's link — their browser goes to a
//! local OAuth 2.0 authorization server (RFC 6749 authorization code with
//! PKCE, written here), which sends it back to the callback; the callback
//! checks the state, exchanges the code and stores the tokens. Then the n8n
//! workflow JSON "Webhook → Google Sheets append → Gmail send" is imported,
//! validated, published and called at its webhook URL, and runs in the
//! executor against local stand-ins of the Sheets and Gmail APIs; expired
//! and refused tokens are refreshed once, a revoked refresh token asks to
//! reconnect. No token ever shows in a REST or MCP answer.

use base64::Engine as _;
use local_cloud::{start, Options, Running};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use store::testing::TestEnv;

const ALICE: &str = "alice-key-for-google-tests";
const BOB: &str = "bob-key-for-google-tests";
const CLIENT_ID: &str = "1234-e2e.apps.googleusercontent.com";
const CLIENT_SECRET: &str = "GOCSPX-e2e-client-secret";
const SPREADSHEET: &str = "1LeadsSheet0000000000000000000000000000";

/// The n8n export, byte for byte what n8n writes (credential ids are the
/// exporting instance's).
const WORKFLOW: &str = r#"{
  "name": "New lead to sheet and welcome email",
  "nodes": [
    {"parameters": {"httpMethod": "POST", "path": "new-lead", "options": {}}, "id": "0f6f1a8e-2b4c-4d6e-8f00-1a2b3c4d5e6f", "name": "Webhook", "type": "n8n-nodes-base.webhook", "typeVersion": 2, "position": [0, 0], "webhookId": "7d2c9a4e-5f1b-4e3a-9c8d-2b1a0f9e8d7c"},
    {"parameters": {"operation": "append", "documentId": {"__rl": true, "value": "1LeadsSheet0000000000000000000000000000", "mode": "list", "cachedResultName": "Leads", "cachedResultUrl": "https://docs.google.com/spreadsheets/d/1LeadsSheet0000000000000000000000000000/edit?usp=drivesdk"}, "sheetName": {"__rl": true, "value": "gid=0", "mode": "list", "cachedResultName": "Sheet1", "cachedResultUrl": "https://docs.google.com/spreadsheets/d/1LeadsSheet0000000000000000000000000000/edit#gid=0"}, "columns": {"mappingMode": "defineBelow", "value": {"Name": "={{ $json.body.name }}", "Email": "={{ $json.body.email }}", "Source": "webhook"}, "matchingColumns": [], "schema": [{"id": "Name", "displayName": "Name", "required": false, "defaultMatch": false, "display": true, "type": "string", "canBeUsedToMatch": true, "removed": false}, {"id": "Email", "displayName": "Email", "required": false, "defaultMatch": false, "display": true, "type": "string", "canBeUsedToMatch": true, "removed": false}, {"id": "Source", "displayName": "Source", "required": false, "defaultMatch": false, "display": true, "type": "string", "canBeUsedToMatch": true, "removed": false}], "attemptToConvertTypes": false, "convertFieldsToString": false}, "options": {}}, "id": "3b1e7c2a-9d4f-4a6b-8c1d-5e2f3a4b6c7d", "name": "Google Sheets", "type": "n8n-nodes-base.googleSheets", "typeVersion": 4.5, "position": [220, 0], "credentials": {"googleSheetsOAuth2Api": {"id": "hT6rXu4LpQ2wZ9aB", "name": "Google Sheets account"}}},
    {"parameters": {"sendTo": "={{ $json.Email }}", "subject": "=Welcome, {{ $json.Name }}!", "message": "=<p>Hi {{ $json.Name }}, thanks for signing up.</p>", "options": {"appendAttribution": false}}, "id": "9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d", "name": "Gmail", "type": "n8n-nodes-base.gmail", "typeVersion": 2.1, "position": [440, 0], "webhookId": "e1d2c3b4-a5f6-4e7d-8c9b-0a1b2c3d4e5f", "credentials": {"gmailOAuth2": {"id": "Gm4iLcR3dS7tU1vW", "name": "Gmail account"}}}
  ],
  "pinData": {},
  "connections": {
    "Webhook": {"main": [[{"node": "Google Sheets", "type": "main", "index": 0}]]},
    "Google Sheets": {"main": [[{"node": "Gmail", "type": "main", "index": 0}]]}
  },
  "active": false,
  "settings": {"executionOrder": "v1"},
  "versionId": "5c4b3a29-1807-4f6e-9d5c-4b3a29180716",
  "meta": {"templateCredsSetupCompleted": true, "instanceId": "8f7e6d5c4b3a2918"},
  "tags": []
}"#;

/// What the stand-in for Google saw and holds.
#[derive(Default)]
struct Google {
    /// code → (challenge, redirect_uri, scope), single use
    codes: BTreeMap<String, (String, String, String)>,
    access: Vec<String>,
    refresh: Vec<String>,
    issued: usize,
    refreshes: usize,
    sheet: Vec<Vec<Value>>,
    row_count: usize,
    sent: Vec<String>,
    /// Every API call (method, path, authorization).
    calls: Vec<(String, String, String)>,
}

type Shared = Arc<Mutex<Google>>;

fn oauth_error(status: u16, code: &str, description: &str) -> axum::response::Response {
    reply(status, json!({"error": code, "error_description": description}))
}

fn reply(status: u16, body: Value) -> axum::response::Response {
    axum::response::Response::builder().status(status).header("content-type", "application/json").body(axum::body::Body::from(body.to_string())).unwrap()
}

fn api_error(status: u16, message: &str, code: &str) -> axum::response::Response {
    reply(status, json!({"error": {"code": status, "message": message, "status": code}}))
}

fn query(uri: &axum::http::Uri) -> BTreeMap<String, String> {
    reqwest::Url::parse(&format!("http://x{uri}")).unwrap().query_pairs().into_owned().collect()
}

/// Google's authorization page (the person consents at once), token
/// endpoint, and the Sheets and Gmail calls the workflow makes.
async fn google(state: Shared) -> String {
    let app = axum::Router::new().fallback(move |method: axum::http::Method, uri: axum::http::Uri, headers: axum::http::HeaderMap, body: axum::body::Bytes| {
        let state = state.clone();
        async move {
            let mut g = state.lock().unwrap();
            let path = uri.path().to_owned();
            if path == "/o/oauth2/v2/auth" {
                let q = query(&uri);
                let checks = [
                    q.get("response_type").map(String::as_str) == Some("code"),
                    q.get("client_id").map(String::as_str) == Some(CLIENT_ID),
                    q.get("code_challenge_method").map(String::as_str) == Some("S256"),
                    q.get("code_challenge").is_some_and(|c| c.len() == 43),
                    q.get("access_type").map(String::as_str) == Some("offline"),
                    q.contains_key("state") && q.contains_key("redirect_uri"),
                ];
                if checks.contains(&false) {
                    return reply(400, json!({"error": "invalid_request", "query": q}));
                }
                g.issued += 1;
                let code = format!("4/0Acode-{}", g.issued);
                g.codes.insert(code.clone(), (q["code_challenge"].clone(), q["redirect_uri"].clone(), q.get("scope").cloned().unwrap_or_default()));
                let mut back = reqwest::Url::parse(&q["redirect_uri"]).unwrap();
                back.query_pairs_mut().append_pair("code", &code).append_pair("state", &q["state"]).append_pair("scope", q.get("scope").map(String::as_str).unwrap_or(""));
                return axum::response::Response::builder().status(302).header("location", back.as_str()).body(axum::body::Body::empty()).unwrap();
            }
            if path == "/token" && method == "POST" {
                let f: BTreeMap<String, String> = reqwest::Url::parse(&format!("http://x/?{}", String::from_utf8_lossy(&body))).unwrap().query_pairs().into_owned().collect();
                if f.get("client_id").map(String::as_str) != Some(CLIENT_ID) || f.get("client_secret").map(String::as_str) != Some(CLIENT_SECRET) {
                    return oauth_error(401, "invalid_client", "Unauthorized");
                }
                match f.get("grant_type").map(String::as_str) {
                    Some("authorization_code") => {
                        let Some((challenge, redirect, scope)) = f.get("code").and_then(|c| g.codes.remove(c)) else { return oauth_error(400, "invalid_grant", "Malformed auth code.") };
                        if f.get("redirect_uri") != Some(&redirect) {
                            return oauth_error(400, "redirect_uri_mismatch", "Bad Request");
                        }
                        if !store::oauth::pkce_matches(f.get("code_verifier").map(String::as_str).unwrap_or(""), &challenge) {
                            return oauth_error(400, "invalid_grant", "Invalid code verifier.");
                        }
                        g.issued += 1;
                        let (access, refresh) = (format!("ya29.e2e-access-{}", g.issued), format!("1//e2e-refresh-{}", g.issued));
                        g.access.push(access.clone());
                        g.refresh.push(refresh.clone());
                        return reply(200, json!({"access_token": access, "expires_in": 3599, "refresh_token": refresh, "scope": scope, "token_type": "Bearer"}));
                    }
                    Some("refresh_token") => {
                        if !f.get("refresh_token").is_some_and(|r| g.refresh.contains(r)) {
                            return oauth_error(400, "invalid_grant", "Token has been expired or revoked.");
                        }
                        g.issued += 1;
                        g.refreshes += 1;
                        let access = format!("ya29.e2e-access-{}", g.issued);
                        g.access.push(access.clone());
                        return reply(200, json!({"access_token": access, "expires_in": 3599, "token_type": "Bearer"}));
                    }
                    _ => return oauth_error(400, "unsupported_grant_type", ""),
                }
            }
            let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
            g.calls.push((method.to_string(), path.clone(), auth.clone()));
            if !auth.strip_prefix("Bearer ").is_some_and(|t| g.access.iter().any(|a| a == t)) {
                return api_error(401, "Request had invalid authentication credentials.", "UNAUTHENTICATED");
            }
            let sheet = format!("/v4/spreadsheets/{SPREADSHEET}");
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            match (method.as_str(), path.as_str()) {
                ("GET", p) if p == sheet => reply(200, json!({"sheets": [{"properties": {"sheetId": 0, "title": "Sheet1", "index": 0, "gridProperties": {"rowCount": g.row_count, "columnCount": 26}}}]})),
                ("GET", p) if p == format!("{sheet}/values/'Sheet1'") => reply(200, json!({"range": "Sheet1!A1:Z1000", "majorDimension": "ROWS", "values": g.sheet})),
                ("POST", p) if p == format!("{sheet}:batchUpdate") => {
                    g.row_count += body["requests"][0]["appendDimension"]["length"].as_u64().unwrap_or(0) as usize;
                    reply(200, json!({"spreadsheetId": SPREADSHEET, "replies": [{}]}))
                }
                ("PUT", p) if p.starts_with(&format!("{sheet}/values/Sheet1!")) => {
                    let start: usize = p.rsplit('!').next().unwrap().split(':').next().unwrap().parse().unwrap();
                    if start > g.row_count {
                        return api_error(400, "Range exceeds grid limits", "INVALID_ARGUMENT");
                    }
                    for (k, row) in body["values"].as_array().unwrap().iter().enumerate() {
                        let at = start - 1 + k;
                        while g.sheet.len() <= at {
                            g.sheet.push(vec![]);
                        }
                        g.sheet[at] = row.as_array().unwrap().clone();
                    }
                    reply(200, json!({"spreadsheetId": SPREADSHEET, "updatedRange": body["range"], "updatedRows": body["values"].as_array().unwrap().len()}))
                }
                ("POST", "/gmail/v1/users/me/messages/send") => {
                    let raw = base64::engine::general_purpose::URL_SAFE.decode(body["raw"].as_str().unwrap_or("")).unwrap();
                    g.sent.push(String::from_utf8_lossy(&raw).into_owned());
                    let id = format!("18d{:05}", g.sent.len());
                    reply(200, json!({"id": id, "threadId": id, "labelIds": ["SENT"]}))
                }
                _ => api_error(404, "Requested entity was not found.", "NOT_FOUND"),
            }
        }
    });
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    format!("http://{addr}")
}

struct Stack {
    cloud: Running,
    http: reqwest::Client,
    /// The person's browser: redirects are looked at, not followed.
    browser: reqwest::Client,
    google: String,
    state: Shared,
}

async fn stack() -> Stack {
    let state: Shared = Arc::default();
    state.lock().unwrap().sheet = vec![vec![json!("Name"), json!("Email"), json!("Source")]];
    state.lock().unwrap().row_count = 1;
    let google = google(state.clone()).await;
    let env = TestEnv::new().await;
    let mut config = env.config.clone();
    config.bootstrap_keys = vec![("alice".into(), ALICE.into()), ("bob".into(), BOB.into())];
    config.http_allowed_hosts = vec!["127.0.0.1".into()];
    config.http_allow_private_network = true;
    let overrides = ["https://oauth2.googleapis.com", "https://sheets.googleapis.com", "https://www.googleapis.com"].map(|o| format!("{o}={google}")).join(",");
    config.set_var("INSTANCE_AI_SERVICE_ORIGIN_OVERRIDES", overrides);
    let cloud = start(Options { config, prefix: env.prefix.clone(), port: 0, run_consumers: true, run_schedules: false }).await.expect("local cloud starts");
    let browser = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    Stack { cloud, http: reqwest::Client::new(), browser, google, state }
}

impl Stack {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.cloud.base_url())
    }

    async fn rest(&self, key: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, String) {
        let mut r = self.http.request(method, self.url(path)).bearer_auth(key);
        if let Some(b) = body {
            r = r.json(&b);
        }
        let resp = r.send().await.unwrap();
        (resp.status().as_u16(), resp.text().await.unwrap())
    }

    async fn tool(&self, name: &str, args: Value) -> Result<Value, String> {
        let r: Value = self
            .http
            .post(self.url("/mcp"))
            .bearer_auth(ALICE)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if r["result"]["isError"] == true {
            return Err(r["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned());
        }
        Ok(r["result"]["structuredContent"].clone())
    }

    /// Creates a credential of `kind` through the REST API; its id.
    async fn credential(&self, kind: &str, name: &str) -> String {
        let (status, body) = self.rest(ALICE, reqwest::Method::POST, "/instance-ai/credentials", Some(json!({"name": name, "type": kind, "data": {"clientId": CLIENT_ID, "clientSecret": CLIENT_SECRET}}))).await;
        assert_eq!(status, 201, "{body}");
        serde_json::from_str::<Value>(&body).unwrap()["id"].as_str().unwrap().to_owned()
    }

    /// The person connects credential `id`: the start route's link, the
    /// provider's page, the callback. Returns the callback URL it used.
    async fn connect(&self, id: &str) -> String {
        let r = self.http.get(self.url(&format!("/instance-ai/credentials/{id}/oauth2/auth"))).bearer_auth(ALICE).header("accept", "application/json").send().await.unwrap();
        assert_eq!(r.status(), 200);
        let start: Value = r.json().await.unwrap();
        let authorize = start["authorizationUrl"].as_str().unwrap().to_owned();
        assert!(authorize.starts_with("https://accounts.google.com/o/oauth2/v2/auth?"), "{authorize}");
        // the browser at Google (here: the local stand-in)
        let at_google = authorize.replace("https://accounts.google.com", &self.google);
        let r = self.browser.get(&at_google).send().await.unwrap();
        assert_eq!(r.status(), 302, "{}", r.text().await.unwrap());
        let back = r.headers()["location"].to_str().unwrap().to_owned();
        assert!(back.starts_with(&self.url("/instance-ai/oauth2/callback?")), "{back}");
        let r = self.browser.get(&back).send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
        assert!(r.text().await.unwrap().contains("is connected"));
        back
    }

    async fn settled(&self, workflow: &str, n: usize) -> Vec<Value> {
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            let page = self.tool("search_executions", json!({"workflowId": workflow, "limit": 100})).await.expect("search_executions");
            let done: Vec<Value> = page["data"].as_array().cloned().unwrap_or_default().into_iter().filter(|e| matches!(e["status"].as_str(), Some("success" | "error" | "crashed"))).collect();
            if done.len() >= n || Instant::now() > end {
                assert!(done.len() >= n, "{n} settled executions expected: {page}");
                return done;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn connect_import_publish_and_run_webhook_sheets_gmail() {
    let s = stack().await;

    // The n8n JSON imports and validates as it is.
    let exported: Value = serde_json::from_str(WORKFLOW).unwrap();
    let report = instance::validate::validate_with_expressions(&exported);
    assert!(report.findings.is_empty(), "validates clean: {:?}", report.findings);

    let sheets = s.credential("googleSheetsOAuth2Api", "Google Sheets account").await;
    let gmail = s.credential("gmailOAuth2", "Gmail account").await;

    // Not connected yet; only the owner may start; the link answers 302 too.
    let (_, detail) = s.rest(ALICE, reqwest::Method::GET, &format!("/instance-ai/credentials/{sheets}"), None).await;
    assert_eq!(serde_json::from_str::<Value>(&detail).unwrap()["oauth"], json!({"connected": false}));
    let start = format!("/instance-ai/credentials/{sheets}/oauth2/auth");
    assert_eq!(s.rest(BOB, reqwest::Method::GET, &start, None).await.0, 404, "a stranger's start is not found");
    assert_eq!(s.browser.get(s.url(&start)).send().await.unwrap().status(), 401, "an API key is needed");
    let r = s.browser.get(s.url(&start)).bearer_auth(ALICE).send().await.unwrap();
    assert_eq!(r.status(), 302);
    let location = reqwest::Url::parse(r.headers()["location"].to_str().unwrap()).unwrap();
    let q: BTreeMap<String, String> = location.query_pairs().into_owned().collect();
    assert_eq!((location.host_str(), location.path()), (Some("accounts.google.com"), "/o/oauth2/v2/auth"));
    assert_eq!(q["redirect_uri"], s.url("/instance-ai/oauth2/callback"));
    assert_eq!(q["scope"], "https://www.googleapis.com/auth/drive.file https://www.googleapis.com/auth/spreadsheets https://www.googleapis.com/auth/drive.metadata");
    assert_eq!((q["code_challenge_method"].as_str(), q["prompt"].as_str(), q["access_type"].as_str()), ("S256", "consent", "offline"));
    assert!(q["state"].starts_with(&format!("{sheets}.")));

    // Connecting: the state is single-use.
    let used = s.connect(&sheets).await;
    let r = s.browser.get(&used).send().await.unwrap();
    assert_eq!(r.status(), 400, "a replayed callback is refused");
    let forged = used.replace("state=", "state=x");
    assert_eq!(s.browser.get(&forged).send().await.unwrap().status(), 400);
    s.connect(&gmail).await;

    // A refused consent consumes the state and connects nothing.
    let denied: Value = s.http.get(s.url(&format!("/instance-ai/credentials/{gmail}/oauth2/auth"))).bearer_auth(ALICE).header("accept", "application/json").send().await.unwrap().json().await.unwrap();
    let state = reqwest::Url::parse(denied["authorizationUrl"].as_str().unwrap()).unwrap().query_pairs().find(|(k, _)| k == "state").unwrap().1.into_owned();
    let r = s.browser.get(format!("{}?error=access_denied&state={state}", s.url("/instance-ai/oauth2/callback"))).send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("access_denied"));

    // Connected, and no token in any answer.
    let (status, detail) = s.rest(ALICE, reqwest::Method::GET, &format!("/instance-ai/credentials/{sheets}"), None).await;
    assert_eq!(status, 200);
    let detail: Value = serde_json::from_str(&detail).unwrap();
    assert_eq!(detail["oauth"]["connected"], true);
    assert_eq!(detail["oauth"]["connectedBy"], "alice");
    let tokens: Vec<String> = { let g = s.state.lock().unwrap(); g.access.iter().chain(g.refresh.iter()).cloned().collect() };
    let (_, list) = s.rest(ALICE, reqwest::Method::GET, "/instance-ai/credentials", None).await;
    for t in &tokens {
        assert!(!detail.to_string().contains(t.as_str()) && !list.contains(t.as_str()), "a token in a REST answer");
    }

    // Imported with the credentials assigned (the export's ids are another instance's), published.
    let mut wf = exported.clone();
    wf["nodes"][1]["credentials"]["googleSheetsOAuth2Api"]["id"] = json!(sheets);
    wf["nodes"][2]["credentials"]["gmailOAuth2"]["id"] = json!(gmail);
    let data = store::data::InstanceData::new(&s.cloud.app.clients, &s.cloud.app.config).unwrap();
    let alice = protocol::UserId::from("alice".to_owned());
    let project = data.projects.projects_of(&alice).await.unwrap().into_iter().find(|p| p.project.kind == store::data::users_projects::ProjectType::Personal).unwrap().project.id;
    let body = store::data::workflows::WorkflowBody { nodes: wf["nodes"].clone(), connections: wf["connections"].clone(), settings: wf["settings"].clone(), pin_data: json!({}), meta: wf["meta"].clone() };
    let created = data
        .workflows
        .create(store::data::workflows::NewWorkflow { name: wf["name"].as_str().unwrap().into(), description: None, project_id: project, folder_id: None, body, available_in_mcp: true }, &alice)
        .await
        .unwrap();
    let id = created.meta.id;
    s.tool("publish_workflow", json!({"workflowId": id})).await.expect("publish");

    // The webhook runs it: a row appended, a welcome email sent.
    let r = s.http.post(s.url("/webhook/new-lead")).json(&json!({"name": "Ada Lovelace", "email": "ada@example.com"})).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let done = s.settled(&id, 1).await;
    assert_eq!(done[0]["status"], "success", "{:?}", done[0]);
    {
        let g = s.state.lock().unwrap();
        assert_eq!(g.sheet[1], vec![json!("Ada Lovelace"), json!("ada@example.com"), json!("webhook")]);
        let mail = &g.sent[0];
        assert!(mail.contains("To: <ada@example.com>") && mail.contains("Subject: Welcome, Ada Lovelace!") && mail.contains("thanks for signing up"), "{mail}");
        let sheets_calls: Vec<&str> = g.calls.iter().filter(|c| c.1.starts_with("/v4/")).map(|c| c.0.as_str()).collect();
        assert_eq!(sheets_calls, ["GET", "GET", "POST", "PUT"], "requests of the append");
        assert_eq!(g.refreshes, 0);
    }
    let run = s.tool("get_execution", json!({"workflowId": id, "executionId": done[0]["id"], "includeData": true})).await.unwrap();
    let out = |node: &str| run["data"]["resultData"]["runData"][node][0]["data"]["main"][0][0]["json"].clone();
    assert_eq!(out("Google Sheets"), json!({"Name": "Ada Lovelace", "Email": "ada@example.com", "Source": "webhook"}));
    assert_eq!(out("Gmail"), json!({"id": "18d00001", "threadId": "18d00001", "labelIds": ["SENT"]}));
    for t in &tokens {
        assert!(!run.to_string().contains(t.as_str()), "a token in execution data");
    }

    // Google stops accepting the access tokens: one refresh per credential, stored for the next run.
    s.state.lock().unwrap().access.clear();
    s.http.post(s.url("/webhook/new-lead")).json(&json!({"name": "Grace", "email": "grace@example.com"})).send().await.unwrap();
    let done = s.settled(&id, 2).await;
    assert!(done.iter().all(|e| e["status"] == "success"), "{done:?}");
    assert_eq!(s.state.lock().unwrap().refreshes, 2, "Sheets and Gmail each refreshed once");
    s.http.post(s.url("/webhook/new-lead")).json(&json!({"name": "Edsger", "email": "ed@example.com"})).send().await.unwrap();
    let done = s.settled(&id, 3).await;
    assert!(done.iter().all(|e| e["status"] == "success"), "{done:?}");
    assert_eq!(s.state.lock().unwrap().refreshes, 2, "the refreshed tokens were stored: no refresh this time");
    assert_eq!(s.state.lock().unwrap().sheet.len(), 4);

    // The refresh tokens are revoked: the run fails asking to reconnect.
    {
        let mut g = s.state.lock().unwrap();
        g.access.clear();
        g.refresh.clear();
    }
    s.http.post(s.url("/webhook/new-lead")).json(&json!({"name": "Barbara", "email": "b@example.com"})).send().await.unwrap();
    let done = s.settled(&id, 4).await;
    let failed = done.iter().find(|e| e["status"] == "error").expect("a failed run");
    let run = s.tool("get_execution", json!({"workflowId": id, "executionId": failed["id"], "includeData": true})).await.unwrap();
    let error = run["data"]["resultData"]["error"].clone();
    assert_eq!(error["message"], "Reconnect the credential Google Sheets account", "{error}");
    assert!(error["description"].as_str().unwrap_or_default().contains("invalid_grant"));

    // Reconnecting makes it work again.
    s.connect(&sheets).await;
    s.connect(&gmail).await;
    s.http.post(s.url("/webhook/new-lead")).json(&json!({"name": "Alan", "email": "alan@example.com"})).send().await.unwrap();
    let done = s.settled(&id, 5).await;
    assert_eq!(done.iter().filter(|e| e["status"] == "success").count(), 4, "{done:?}");
    s.cloud.shutdown().await;
}
