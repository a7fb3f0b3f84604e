//! Connecting a generic OAuth2 credential (PKCE, a public client: no
//! client secret) against a local authorization server speaking RFC 6749 +
//! RFC 7636: who may start, what the authorization URL carries, the
//! callback's checks (state bound to the user who started it and to the
//! credential), and an HTTP Request node using the connected credential —
//! its token refreshed once on a 401 and stored for the next run. The
//! instance is a front door's: the code exchange and the runs go over the
//! Runs queue to the executor function's consumer (`executions::jobs`).

mod support;
use support::serve_runs_queue;
use instance::credential_connect::CallbackQuery;
use instance::credentials::NewCredentialInput;
use instance::nodes::{ExecuteOutcome, ExecuteRequest};
use executions::{Dispatch, Executor, ExecutorSettings};
use store::deployment::QueueId;
use instance::{Caller, Instance, InstanceError};
use protocol::UserId;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use store::data::users_projects::ProjectRole;
use store::testing::TestEnv;

const CLIENT: &str = "public-client-7";

#[derive(Default)]
struct As {
    codes: BTreeMap<String, (String, String)>,
    access: Vec<String>,
    refresh: Vec<String>,
    token_requests: Vec<BTreeMap<String, String>>,
    issued: usize,
    /// How long `/token` takes to answer.
    token_delay: Duration,
}

fn form(body: &[u8]) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

/// `/authorize` (consents at once), `/token`, and `/api/me` needing a bearer token it issued.
async fn authorization_server(state: Arc<Mutex<As>>) -> String {
    let app = axum::Router::new().fallback(move |method: axum::http::Method, uri: axum::http::Uri, headers: axum::http::HeaderMap, body: axum::body::Bytes| {
        let state = state.clone();
        async move {
            use axum::response::IntoResponse;
            let delay = state.lock().unwrap().token_delay;
            if uri.path() == "/token" && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let mut s = state.lock().unwrap();
            let q = form(uri.query().unwrap_or("").as_bytes());
            match (method.as_str(), uri.path()) {
                ("GET", "/authorize") => {
                    if q.get("client_id").map(String::as_str) != Some(CLIENT) || q.get("code_challenge_method").map(String::as_str) != Some("S256") {
                        return (axum::http::StatusCode::BAD_REQUEST, "invalid_request").into_response();
                    }
                    s.issued += 1;
                    let code = format!("code-{}", s.issued);
                    s.codes.insert(code.clone(), (q["code_challenge"].clone(), q["redirect_uri"].clone()));
                    let location = format!("{}?code={code}&state={}", q["redirect_uri"], url::form_urlencoded::byte_serialize(q["state"].as_bytes()).collect::<String>());
                    (axum::http::StatusCode::FOUND, [("location", location)]).into_response()
                }
                ("POST", "/token") => {
                    let f = form(&body);
                    s.token_requests.push(f.clone());
                    let bad = |code: &str| (axum::http::StatusCode::BAD_REQUEST, axum::Json(json!({"error": code}))).into_response();
                    if f.get("client_id").map(String::as_str) != Some(CLIENT) {
                        return bad("invalid_client");
                    }
                    match f.get("grant_type").map(String::as_str) {
                        Some("authorization_code") => {
                            let Some((challenge, redirect)) = f.get("code").and_then(|c| s.codes.remove(c)) else { return bad("invalid_grant") };
                            if f.get("redirect_uri") != Some(&redirect) || !store::oauth::pkce_matches(f.get("code_verifier").map(String::as_str).unwrap_or(""), &challenge) {
                                return bad("invalid_grant");
                            }
                        }
                        Some("refresh_token") if f.get("refresh_token").is_some_and(|r| s.refresh.contains(r)) => {}
                        _ => return bad("invalid_grant"),
                    }
                    s.issued += 1;
                    let (access, refresh) = (format!("at-{}", s.issued), format!("rt-{}", s.issued));
                    s.access.push(access.clone());
                    s.refresh.push(refresh.clone());
                    axum::Json(json!({"access_token": access, "refresh_token": refresh, "expires_in": 600, "token_type": "bearer"})).into_response()
                }
                ("GET", "/api/me") => {
                    let ok = headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")).is_some_and(|t| s.access.iter().any(|a| a == t));
                    if ok { axum::Json(json!({"me": "alice"})).into_response() } else { (axum::http::StatusCode::UNAUTHORIZED, axum::Json(json!({"error": "invalid_token"}))).into_response() }
                }
                _ => axum::http::StatusCode::NOT_FOUND.into_response(),
            }
        }
    });
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    format!("http://{addr}")
}

/// The test environment's config, with the local authorization server
/// reachable (the SSRF policy refuses loopback otherwise).
fn reaching_localhost(env: &TestEnv) -> store::Config {
    let mut config = env.config.clone();
    config.http_allowed_hosts = vec!["127.0.0.1".into()];
    config.http_allow_private_network = true;
    config
}

/// An instance as the credentials function builds it (the exchange and the
/// runs go over the Runs queue), with the executor function serving that
/// queue.
async fn instance() -> Instance {
    let env = TestEnv::new().await;
    let config = reaching_localhost(&env);
    let inst = Instance::new(&env.clients, &config).await.unwrap();
    assert_eq!(inst.dispatch, Dispatch::Queue);
    serve_runs_queue(&env, &config);
    inst
}

fn caller(name: &str) -> Caller {
    Caller::new(UserId(format!("{name}-{}", uuid::Uuid::new_v4().simple())))
}

const CALLBACK: &str = "https://instance.example.com/instance-ai/oauth2/callback";

/// Follows the authorization URL at the server: the callback query it redirects to.
async fn authorize(url: &str) -> CallbackQuery {
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let r = client.get(url).send().await.unwrap();
    assert_eq!(r.status(), 302);
    let back = url::Url::parse(r.headers()["location"].to_str().unwrap()).unwrap();
    let q: BTreeMap<String, String> = back.query_pairs().into_owned().collect();
    CallbackQuery { state: q.get("state").cloned(), code: q.get("code").cloned(), ..CallbackQuery::default() }
}

#[tokio::test]
async fn a_pkce_credential_is_connected_by_its_owner_and_refreshed_at_run_time() {
    let state: Arc<Mutex<As>> = Arc::default();
    let base = authorization_server(state.clone()).await;
    let inst = instance().await;
    let (alice, bob) = (caller("alice"), caller("bob"));
    let data = json!({"grantType": "pkce", "authUrl": format!("{base}/authorize"), "accessTokenUrl": format!("{base}/token"), "clientId": CLIENT, "scope": "read write", "authQueryParameters": "audience=api"});
    let cred = inst.create_credential(&alice, NewCredentialInput { name: "My API".into(), kind: "oAuth2Api".into(), data, description: None, project_id: None }).await.unwrap();

    // The owner's start: the authorization URL with the PKCE challenge and the type's query.
    assert!(matches!(inst.start_oauth_connect(&bob, &cred.id, CALLBACK).await, Err(InstanceError::NotFound(_))), "strangers: not found");
    let start = inst.start_oauth_connect(&alice, &cred.id, CALLBACK).await.unwrap();
    let url = url::Url::parse(&start.authorization_url).unwrap();
    let q: BTreeMap<String, String> = url.query_pairs().into_owned().collect();
    assert_eq!(url.path(), "/authorize");
    assert_eq!((q["response_type"].as_str(), q["client_id"].as_str(), q["redirect_uri"].as_str(), q["scope"].as_str(), q["audience"].as_str()), ("code", CLIENT, CALLBACK, "read write", "api"));
    assert_eq!((q["code_challenge_method"].as_str(), q["code_challenge"].len()), ("S256", 43));
    assert_eq!(start.expires_in, 600);
    let detail = inst.get_credential(&alice, &cred.id).await.unwrap();
    assert_eq!(serde_json::to_value(&detail).unwrap()["oauth"], json!({"connected": false}));

    // A code the provider does not know: its refusal, as the token URL gave it; nothing connected.
    let bogus = authorize(&start.authorization_url).await;
    let refused = inst.finish_oauth_connect(&CallbackQuery { code: Some("code-forged".into()), ..bogus }).await;
    assert!(matches!(&refused, Err(InstanceError::Invalid(m)) if m == "The token URL refused the authorization code (invalid_grant) (HTTP 400)"), "{refused:?}");
    let detail = inst.get_credential(&alice, &cred.id).await.unwrap();
    assert_eq!(serde_json::to_value(&detail).unwrap()["oauth"], json!({"connected": false}));
    let start = inst.start_oauth_connect(&alice, &cred.id, CALLBACK).await.unwrap();

    // The provider sends the browser back: exchanged with the verifier, no secret (a public client).
    let back = authorize(&start.authorization_url).await;
    let connected = inst.finish_oauth_connect(&back).await.unwrap();
    assert_eq!(connected.id, cred.id);
    let exchange = state.lock().unwrap().token_requests.last().cloned().unwrap();
    assert_eq!((exchange["grant_type"].as_str(), exchange["redirect_uri"].as_str()), ("authorization_code", CALLBACK));
    assert!(exchange.contains_key("code_verifier") && !exchange.contains_key("client_secret"));
    assert!(matches!(inst.finish_oauth_connect(&back).await, Err(InstanceError::Invalid(_))), "the state is single-use");
    let detail = serde_json::to_value(inst.get_credential(&alice, &cred.id).await.unwrap()).unwrap();
    assert_eq!(detail["oauth"]["connected"], true);
    assert_eq!(detail["oauth"]["connectedBy"], json!(alice.user.0));
    assert!(!detail.to_string().contains("at-") && !detail.to_string().contains("rt-"), "no token: {detail}");

    // An HTTP Request node with the credential; the provider drops the access token: one refresh, stored.
    let request: ExecuteRequest = serde_json::from_value(json!({"type": "n8n-nodes-base.httpRequest", "version": 4.2,
        "config": {"parameters": {"url": format!("{base}/api/me"), "authentication": "genericCredentialType", "genericAuthType": "oAuth2Api", "options": {}},
                   "credentials": {"oAuth2Api": {"id": cred.id, "name": "My API"}}}})).unwrap();
    let ok = inst.execute_node(&alice, &request).await.unwrap();
    assert!(matches!(&ok, ExecuteOutcome::Success { items, .. } if items[0]["json"]["me"] == "alice"), "{ok:?}");
    state.lock().unwrap().access.clear();
    let before = state.lock().unwrap().token_requests.len();
    let ok = inst.execute_node(&alice, &request).await.unwrap();
    assert!(matches!(&ok, ExecuteOutcome::Success { .. }), "{ok:?}");
    let refreshes: Vec<_> = state.lock().unwrap().token_requests[before..].to_vec();
    assert_eq!(refreshes.len(), 1, "one refresh for the 401");
    assert_eq!(refreshes[0]["grant_type"], "refresh_token");
    let ok = inst.execute_node(&alice, &request).await.unwrap();
    assert!(matches!(&ok, ExecuteOutcome::Success { .. }), "{ok:?}");
    assert_eq!(state.lock().unwrap().token_requests.len(), before + 1, "the refreshed token was stored");

    // A revoked refresh token: reconnect.
    {
        let mut s = state.lock().unwrap();
        s.access.clear();
        s.refresh.clear();
    }
    let failed = inst.execute_node(&alice, &request).await.unwrap();
    let ExecuteOutcome::Error { message, description, .. } = failed else { panic!("{failed:?}") };
    assert_eq!(message, "Reconnect the credential My API");
    assert!(description.unwrap_or_default().contains("invalid_grant"));
}

#[tokio::test]
async fn the_callback_finishes_only_for_the_user_who_may_still_change_the_credential() {
    let state: Arc<Mutex<As>> = Arc::default();
    let base = authorization_server(state.clone()).await;
    let inst = instance().await;
    let (alice, bob) = (caller("alice"), caller("bob"));
    inst.user(&bob).await.unwrap();
    inst.user(&alice).await.unwrap();
    let team = inst.data.projects.create_team_project("Ops", &alice.user).await.unwrap();
    inst.data.projects.set_member(&team.id, &bob.user, ProjectRole::Editor).await.unwrap();
    let data = json!({"grantType": "authorizationCode", "authUrl": format!("{base}/authorize"), "accessTokenUrl": format!("{base}/token"), "clientId": CLIENT, "clientSecret": "s3cret-client"});
    let cred = inst.create_credential(&alice, NewCredentialInput { name: "Team API".into(), kind: "oAuth2Api".into(), data, description: None, project_id: Some(team.id.clone()) }).await.unwrap();

    // bob, an editor, starts; his role drops to viewer before the provider sends him back
    let start = inst.start_oauth_connect(&bob, &cred.id, CALLBACK).await.unwrap();
    inst.data.projects.set_member(&team.id, &bob.user, ProjectRole::Viewer).await.unwrap();
    let back = authorize(&start.authorization_url).await;
    assert!(matches!(inst.finish_oauth_connect(&back).await, Err(InstanceError::Forbidden(_))));
    assert!(matches!(inst.start_oauth_connect(&bob, &cred.id, CALLBACK).await, Err(InstanceError::Forbidden(_))), "a viewer cannot start either");
    assert!(!serde_json::to_value(inst.get_credential(&alice, &cred.id).await.unwrap()).unwrap()["oauth"]["connected"].as_bool().unwrap());

    // a refusal at the provider, a credential deleted meanwhile
    let start = inst.start_oauth_connect(&alice, &cred.id, CALLBACK).await.unwrap();
    let state_value = url::Url::parse(&start.authorization_url).unwrap().query_pairs().find(|(k, _)| k == "state").unwrap().1.into_owned();
    let refused = inst.finish_oauth_connect(&CallbackQuery { state: Some(state_value), error: Some("access_denied".into()), ..CallbackQuery::default() }).await;
    assert!(matches!(&refused, Err(InstanceError::Invalid(m)) if m.contains("access_denied")), "{refused:?}");
    let start = inst.start_oauth_connect(&alice, &cred.id, CALLBACK).await.unwrap();
    let back = authorize(&start.authorization_url).await;
    inst.delete_credential(&alice, &cred.id).await.unwrap();
    let gone = inst.finish_oauth_connect(&back).await;
    assert!(matches!(&gone, Err(InstanceError::Invalid(m)) if m.contains("unknown, used or expired")), "the credential and its connects are gone: {gone:?}");

    // deleted while the provider exchanges the code: not found either, and nothing is stored
    let pkce = json!({"grantType": "pkce", "authUrl": format!("{base}/authorize"), "accessTokenUrl": format!("{base}/token"), "clientId": CLIENT});
    let cred = inst.create_credential(&alice, NewCredentialInput { name: "Public API".into(), kind: "oAuth2Api".into(), data: pkce, description: None, project_id: None }).await.unwrap();
    let start = inst.start_oauth_connect(&alice, &cred.id, CALLBACK).await.unwrap();
    let back = authorize(&start.authorization_url).await;
    state.lock().unwrap().token_delay = Duration::from_millis(1500);
    let exchanges = state.lock().unwrap().token_requests.len();
    let deleted_meanwhile = async {
        tokio::time::sleep(Duration::from_millis(700)).await;
        inst.delete_credential(&alice, &cred.id).await.unwrap();
    };
    let (finished, ()) = tokio::join!(inst.finish_oauth_connect(&back), deleted_meanwhile);
    assert!(matches!(&finished, Err(InstanceError::NotFound(m)) if m.contains("deleted while it was being connected")), "{finished:?}");
    assert!(inst.data.credentials.connection(&cred.id).await.unwrap().is_none(), "no tokens were stored");
    state.lock().unwrap().token_delay = Duration::ZERO;
    let made: Vec<_> = state.lock().unwrap().token_requests[exchanges..].to_vec();
    assert!(made.len() <= 1 && made.iter().all(|r| r["grant_type"] == "authorization_code"), "{made:?}");

    // types that are not connected through a provider's page
    let header = inst.create_credential(&alice, NewCredentialInput { name: "Key".into(), kind: "httpHeaderAuth".into(), data: json!({"name": "x", "value": "y"}), description: None, project_id: None }).await.unwrap();
    assert!(matches!(inst.start_oauth_connect(&alice, &header.id, CALLBACK).await, Err(InstanceError::Invalid(_))));
    let cc = json!({"grantType": "clientCredentials", "accessTokenUrl": format!("{base}/token"), "clientId": CLIENT, "clientSecret": "x"});
    let cc = inst.create_credential(&alice, NewCredentialInput { name: "M2M".into(), kind: "oAuth2Api".into(), data: cc, description: None, project_id: None }).await.unwrap();
    let e = inst.start_oauth_connect(&alice, &cc.id, CALLBACK).await.unwrap_err();
    assert!(e.to_string().contains("client credentials"), "{e}");
}

#[tokio::test]
async fn a_callback_no_executor_answers_is_unavailable_and_says_to_connect_again() {
    let state: Arc<Mutex<As>> = Arc::default();
    let base = authorization_server(state.clone()).await;
    let env = TestEnv::new().await;
    let config = reaching_localhost(&env);
    let mut inst = Instance::new(&env.clients, &config).await.unwrap();
    // nobody serves the Runs queue
    let settings = ExecutorSettings { job_wait: Duration::from_secs(1), ..ExecutorSettings::from_config(&config) };
    inst.executor = Executor::new(inst.data.clone(), env.clients.sqs.clone(), config.queue_url(QueueId::Runs).unwrap(), settings);
    let alice = caller("alice");
    let data = json!({"grantType": "pkce", "authUrl": format!("{base}/authorize"), "accessTokenUrl": format!("{base}/token"), "clientId": CLIENT});
    let cred = inst.create_credential(&alice, NewCredentialInput { name: "My API".into(), kind: "oAuth2Api".into(), data, description: None, project_id: None }).await.unwrap();
    let start = inst.start_oauth_connect(&alice, &cred.id, CALLBACK).await.unwrap();
    let back = authorize(&start.authorization_url).await;
    let started = Instant::now();
    let err = inst.finish_oauth_connect(&back).await.unwrap_err();
    assert!(matches!(&err, InstanceError::Unavailable(m) if m.contains("did not answer within 1 s") && m.contains("try again") && m.contains("Connect link")), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "gave up after {:?}", started.elapsed());
    assert!(state.lock().unwrap().token_requests.is_empty(), "the exchange was not made here");
    assert!(!err.to_string().contains(back.code.as_deref().unwrap()), "no code in the message: {err}");
}

/// SQS delivers at least once: the executor stored the tokens and stopped
/// before its answer was written, and the exchange comes again. The code is
/// not exchanged twice (the provider would refuse it): the connect finishes.
#[tokio::test]
async fn an_exchange_delivered_again_after_the_tokens_were_stored_finishes_the_connect() {
    let state: Arc<Mutex<As>> = Arc::default();
    let base = authorization_server(state.clone()).await;
    let env = TestEnv::new().await;
    let config = reaching_localhost(&env);
    let inst = Instance::new(&env.clients, &config).await.unwrap();
    let executor = Executor::new(inst.data.clone(), env.clients.sqs.clone(), config.queue_url(QueueId::Runs).unwrap(), ExecutorSettings::from_config(&config));
    let sqs = env.clients.sqs.clone();
    let (url, answers) = (config.queue_url(QueueId::Runs).unwrap().to_owned(), config.table(store::deployment::TableId::Executions).unwrap().to_owned());
    let redelivered = Arc::new(Mutex::new(0));
    let seen = redelivered.clone();
    tokio::spawn(async move {
        loop {
            let Ok(out) = sqs.receive_message().queue_url(&url).max_number_of_messages(10).wait_time_seconds(1).send().await else { continue };
            for m in out.messages.unwrap_or_default() {
                let record = || executions::QueueRecord { message_id: m.message_id.clone().unwrap_or_default(), body: m.body.clone() };
                let body: serde_json::Value = serde_json::from_str(m.body.as_deref().unwrap_or("{}")).unwrap();
                if body["job"]["kind"] == "oAuthConnect" {
                    // the tokens are stored, then the answer's write fails:
                    // the message is reported failed, and comes again
                    store::testing::inject_transaction_conflicts(&answers, "PutItem", 1);
                    assert_eq!(executor.handle_queue_batch([record()]).await.len(), 1, "the answer was not written");
                    *seen.lock().unwrap() += 1;
                }
                assert!(executor.handle_queue_batch([record()]).await.is_empty());
                sqs.delete_message().queue_url(&url).receipt_handle(m.receipt_handle.clone().unwrap_or_default()).send().await.unwrap();
            }
        }
    });
    let alice = caller("alice");
    let data = json!({"grantType": "pkce", "authUrl": format!("{base}/authorize"), "accessTokenUrl": format!("{base}/token"), "clientId": CLIENT});
    let cred = inst.create_credential(&alice, NewCredentialInput { name: "My API".into(), kind: "oAuth2Api".into(), data, description: None, project_id: None }).await.unwrap();
    let start = inst.start_oauth_connect(&alice, &cred.id, CALLBACK).await.unwrap();
    let back = authorize(&start.authorization_url).await;
    let connected = inst.finish_oauth_connect(&back).await;
    assert!(connected.is_ok(), "{connected:?}");
    assert_eq!(*redelivered.lock().unwrap(), 1, "the exchange was delivered twice");
    let exchanges: Vec<_> = state.lock().unwrap().token_requests.iter().map(|r| r["grant_type"].clone()).collect();
    assert_eq!(exchanges, ["authorization_code"], "the code was exchanged once");
    let connection = inst.data.credentials.connection(&cred.id).await.unwrap().expect("connected");
    assert_eq!(connection.connected_by, alice.user.0);
    let tokens = inst.data.credentials.decrypt_tokens(&cred.id).await.unwrap().unwrap();
    assert_eq!(tokens.expose()["access_token"], json!(state.lock().unwrap().access[0]), "the tokens the one exchange gave");
}
