//! OAuth2 at run time against the local token endpoint: a connected
//! credential's token refreshed when it has expired or a request is
//! answered 401 (one refresh per request), the refreshed tokens handed to
//! the host to store, a refused refresh token reported as "reconnect the
//! credential" (on the error output too), and a service account's JWT
//! bearer grant signed with its private key.

use engine::ExecutionStatus;
use serde_json::{json, Value};

use crate::google::{access_token, connected, count, engine_with, now, Google, Store, Tab, SPREADSHEET};
use crate::support::{output, run_node};

const CRED: &str = "googleSheetsOAuth2Api";

fn google() -> Google {
    let g = Google::start();
    g.state.lock().unwrap().tabs = vec![Tab { id: 0, title: "Sheet1".into(), rows: vec![vec![json!("name")], vec![json!("Ann")]], row_count: 2 }];
    g
}

fn read(on_error: Option<&str>) -> Value {
    let mut n = json!({"type": "n8n-nodes-base.googleSheets", "typeVersion": 4.5, "parameters": {
        "operation": "read",
        "documentId": {"__rl": true, "value": SPREADSHEET, "mode": "id"},
        "sheetName": {"__rl": true, "value": "gid=0", "mode": "list"}
    }, "credentials": {CRED: {"id": "c1", "name": "Sheets account"}}});
    if let Some(e) = on_error {
        n["onError"] = json!(e);
    }
    n
}

fn store(data: Value) -> Store {
    let s = Store::default();
    s.0.lock().unwrap().insert(CRED.into(), data);
    s
}

fn lines(g: &Google) -> Vec<String> {
    g.server.take().iter().map(|r| format!("{} {}", r.method, r.path)).collect()
}

#[test]
fn an_expired_token_is_refreshed_before_the_request_and_stored() {
    let g = google();
    let (access, refresh) = g.connect();
    let s = store(connected(&access, &refresh, now() - 10));
    let st = run_node(&engine_with(&g, &s), read(None), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = g.server.take();
    assert_eq!(seen.iter().map(|r| format!("{} {}", r.method, r.path)).collect::<Vec<_>>()[..2], ["POST /token".to_owned(), format!("GET /v4/spreadsheets/{SPREADSHEET}")]);
    let form: std::collections::BTreeMap<String, String> = url::form_urlencoded::parse(&seen[0].body).into_owned().collect();
    assert_eq!(form.get("grant_type").map(String::as_str), Some("refresh_token"));
    assert_eq!(form.get("refresh_token"), Some(&refresh));
    assert_eq!((form.get("client_id").map(String::as_str), form.get("client_secret").map(String::as_str)), (Some(crate::google::CLIENT_ID), Some(crate::google::CLIENT_SECRET)), "Google's client authentication in the body");
    let fresh = access_token(&s, CRED);
    assert_ne!(fresh, access, "the host stored the refreshed token");
    assert_eq!(seen[1].header("authorization"), Some(format!("Bearer {fresh}").as_str()));
    let stored = s.0.lock().unwrap()[CRED]["oauthTokenData"].clone();
    assert_eq!(stored["refresh_token"], json!(refresh), "Google sends no new refresh token: the old one is kept");
    assert!(stored["expires_at"].as_i64().unwrap() > now() + 3000);
    assert_eq!(output(&st).len(), 1);
}

#[test]
fn a_401_refreshes_once_and_resends() {
    let g = google();
    let (access, refresh) = g.connect();
    // the provider no longer accepts the stored access token (revoked, rotated)
    g.state.lock().unwrap().access.retain(|a| *a != access);
    let s = store(connected(&access, &refresh, now() + 3000));
    let st = run_node(&engine_with(&g, &s), read(None), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let l = lines(&g);
    assert_eq!(l[..3], [format!("GET /v4/spreadsheets/{SPREADSHEET}"), "POST /token".to_owned(), format!("GET /v4/spreadsheets/{SPREADSHEET}")]);
    assert_eq!(l.iter().filter(|l| *l == "POST /token").count(), 1);

    // an API that keeps refusing: exactly one refresh for the request, then its 401
    g.state.lock().unwrap().deny = true;
    let st = run_node(&engine_with(&g, &s), read(None), json!([{}]));
    let seen = g.server.take();
    assert_eq!(count(&seen, "POST", "/token"), 1, "one refresh per request");
    assert_eq!(count(&seen, "GET", &format!("/v4/spreadsheets/{SPREADSHEET}")), 2);
    let e = st.error.expect("the 401 is the node's error");
    assert_eq!(e.http_code.as_deref(), Some("401"));
}

#[test]
fn a_refused_refresh_token_asks_to_reconnect_without_crashing() {
    let g = google();
    let (access, refresh) = g.connect();
    g.state.lock().unwrap().refresh.clear();
    let s = store(connected(&access, &refresh, now() - 10));
    let st = run_node(&engine_with(&g, &s), read(None), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Error);
    let e = st.error.expect("an error");
    assert_eq!(e.message, "Reconnect the credential Sheets account");
    let d = e.description.unwrap_or_default();
    assert!(d.contains("invalid_grant") && d.contains("Token has been expired or revoked"), "{d}");
    assert_eq!(lines(&g), ["POST /token"], "nothing sent with the dead token");

    // continuing on error, the workflow goes on: the input passes, the node's run keeps the error
    let st = run_node(&engine_with(&g, &s), read(Some("continueRegularOutput")), json!([{"row": 1}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(output(&st), vec![json!({"row": 1})]);
    assert_eq!(st.run_data["Service"][0].error.as_ref().unwrap().message, "Reconnect the credential Sheets account");

    // not connected at all
    let s = store(json!({"clientId": "x", "clientSecret": "y"}));
    let st = run_node(&engine_with(&g, &s), read(None), json!([{}]));
    assert_eq!(st.error.unwrap().message, "The credential Sheets account is not connected");
}

#[test]
fn a_service_account_signs_a_jwt_for_the_nodes_scopes_once_per_run() {
    let g = google();
    g.state.lock().unwrap().sa_public_key = Some(include_str!("keys/service_account_test.pub").to_owned());
    let s = Store::default();
    let key = include_str!("keys/service_account_test.pem").replace('\n', "\\n");
    s.0.lock().unwrap().insert("googleApi".into(), json!({"email": crate::google::SA_EMAIL, "privateKey": key}));
    let mut node = read(None);
    node["parameters"]["authentication"] = json!("serviceAccount");
    node["credentials"] = json!({"googleApi": {"id": "sa1", "name": "Robot"}});
    let st = run_node(&engine_with(&g, &s), node, json!([{}, {}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = g.server.take();
    assert_eq!(count(&seen, "POST", "/token"), 1, "one exchange for the run");
    let form: std::collections::BTreeMap<String, String> = url::form_urlencoded::parse(&seen[0].body).into_owned().collect();
    assert_eq!(form.get("grant_type").map(String::as_str), Some("urn:ietf:params:oauth:grant-type:jwt-bearer"));
    let claims = g.state.lock().unwrap().assertions[0].clone();
    assert_eq!(claims["scope"], "https://www.googleapis.com/auth/drive.file https://www.googleapis.com/auth/spreadsheets https://www.googleapis.com/auth/drive.metadata");
    assert_eq!((claims["sub"].clone(), claims["aud"].clone()), (json!(crate::google::SA_EMAIL), json!("https://oauth2.googleapis.com/token")));
    assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 3600);
    assert!(seen[1].header("authorization").unwrap().starts_with("Bearer ya29.sa-"));
    assert_eq!(output(&st).len(), 2, "read per item (4.2+)");

    // a key that is no key
    s.0.lock().unwrap().insert("googleApi".into(), json!({"email": crate::google::SA_EMAIL, "privateKey": "not a key"}));
    let mut node = read(None);
    node["parameters"]["authentication"] = json!("serviceAccount");
    node["credentials"] = json!({"googleApi": {"id": "sa2", "name": "Robot"}});
    let st = run_node(&engine_with(&g, &s), node, json!([{}]));
    assert_eq!(st.error.unwrap().message, "The service account's private key is not a valid PEM RSA key");
}
