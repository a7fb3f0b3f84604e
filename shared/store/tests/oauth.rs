//! The OAuth records against moto: codes are single-use and expire, refresh
//! tokens rotate and a replay revokes the grant, revocation reaches every
//! token of a grant, and nothing is stored in clear.

use aws_sdk_dynamodb::types::AttributeValue;
use protocol::UserId;
use store::deployment::TableId;
use store::oauth::{ClientRecord, CodeRecord, ExchangeError, ExchangeRefusal, Lifetimes, OAuthStore};
use store::testing::TestEnv;

const LIFE: Lifetimes = Lifetimes { access_secs: 900, refresh_secs: 3600 };
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
const RESOURCE: &str = "http://127.0.0.1:9/mcp";

async fn setup() -> (TestEnv, OAuthStore, ClientRecord) {
    let env = TestEnv::new().await;
    let store = OAuthStore::new(env.clients.dynamo.clone(), env.config.table(TableId::OAuth).unwrap());
    let record = ClientRecord {
        client_id: String::new(),
        client_name: Some("test client".into()),
        redirect_uris: vec!["http://127.0.0.1:5000/callback".into()],
        grant_types: vec!["authorization_code".into(), "refresh_token".into()],
        token_endpoint_auth_method: "none".into(),
        secret_hash: None,
        created_at: 0,
    };
    let (client, secret) = store.register_client(record, false).await.unwrap();
    assert!(secret.is_none(), "a public client gets no secret");
    (env, store, client)
}

async fn code(store: &OAuthStore, client: &ClientRecord) -> String {
    store
        .issue_code(&client.client_id, &UserId("alice".into()), &client.redirect_uris[0], CHALLENGE, RESOURCE, "mcp:read mcp:write")
        .await
        .unwrap()
}

async fn redeem_and_open(store: &OAuthStore, client: &ClientRecord) -> (CodeRecord, store::oauth::IssuedTokens) {
    let c = code(store, client).await;
    let record = store.redeem_code(&c).await.unwrap();
    let tokens = store.open_grant(&record, LIFE).await.unwrap();
    (record, tokens)
}

fn refused(r: Result<impl std::fmt::Debug, ExchangeError>) -> ExchangeRefusal {
    match r {
        Err(ExchangeError::Refused(why)) => why,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// Every attribute value in the table, as text: what someone reading the
/// table would see.
async fn table_text(env: &TestEnv) -> String {
    let out = env.clients.dynamo.scan().table_name(env.config.table(TableId::OAuth).unwrap()).send().await.unwrap();
    format!("{:?}", out.items.unwrap_or_default())
}

#[tokio::test]
async fn a_code_works_once_and_its_replay_revokes_what_it_issued() {
    let (env, store, client) = setup().await;
    let c = code(&store, &client).await;
    let record = store.redeem_code(&c).await.unwrap();
    assert_eq!((record.user_id.as_str(), record.resource.as_str(), record.scope.as_str()), ("alice", RESOURCE, "mcp:read mcp:write"));
    let tokens = store.open_grant(&record, LIFE).await.unwrap();
    let live = store.access_token(&tokens.access_token).await.unwrap().expect("the access token works");
    assert_eq!((live.user_id.as_str(), live.client_id.as_str()), ("alice", client.client_id.as_str()));

    assert_eq!(refused(store.redeem_code(&c).await), ExchangeRefusal::Replayed);
    assert_eq!(store.access_token(&tokens.access_token).await.unwrap(), None, "a replayed code revokes its grant");
    assert_eq!(refused(store.refresh(&tokens.refresh_token, &client.client_id, LIFE, |s| Some(s.to_owned())).await), ExchangeRefusal::Invalid);
    assert_eq!(refused(store.redeem_code("iac_never-issued").await), ExchangeRefusal::Invalid);

    let text = table_text(&env).await;
    for secret in [&c, &tokens.access_token, &tokens.refresh_token] {
        assert!(!text.contains(secret.as_str()), "{secret} is stored in clear");
    }
}

#[tokio::test]
async fn an_expired_code_is_refused() {
    let (env, store, client) = setup().await;
    let c = code(&store, &client).await;
    // Age the one code item past its minute (DynamoDB's TTL deletes late;
    // the expiry is checked by the redeeming write itself).
    let table = env.config.table(TableId::OAuth).unwrap();
    let items = env.clients.dynamo.scan().table_name(table).send().await.unwrap().items.unwrap_or_default();
    let item = items.iter().find(|i| i.get("sk").and_then(|v| v.as_s().ok()).map(String::as_str) == Some("code")).expect("the code item");
    let expires = item["expiresAt"].as_n().unwrap().parse::<u64>().unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    assert!(expires > now && expires <= now + 61, "a code lives at most a minute ({expires} vs {now})");
    env.clients
        .dynamo
        .update_item()
        .table_name(table)
        .key("pk", item["pk"].clone())
        .key("sk", item["sk"].clone())
        .update_expression("SET expiresAt = :past")
        .expression_attribute_values(":past", AttributeValue::N((now - 1).to_string()))
        .send()
        .await
        .unwrap();
    assert_eq!(refused(store.redeem_code(&c).await), ExchangeRefusal::Invalid);
}

#[tokio::test]
async fn refresh_rotates_and_a_reused_refresh_token_revokes_the_grant() {
    let (_env, store, client) = setup().await;
    let (_, first) = redeem_and_open(&store, &client).await;
    let (_, second) = store.refresh(&first.refresh_token, &client.client_id, LIFE, |s| Some(s.to_owned())).await.unwrap();
    assert_ne!(second.refresh_token, first.refresh_token);
    assert!(store.access_token(&second.access_token).await.unwrap().is_some());
    // Narrowing keeps the rest of the grant.
    let (_, third) = store.refresh(&second.refresh_token, &client.client_id, LIFE, |_| Some("mcp:read".into())).await.unwrap();
    assert_eq!(store.access_token(&third.access_token).await.unwrap().unwrap().scope, "mcp:read");

    // The first refresh token again: a thief or a confused client. Everything goes.
    assert_eq!(refused(store.refresh(&first.refresh_token, &client.client_id, LIFE, |s| Some(s.to_owned())).await), ExchangeRefusal::Replayed);
    assert_eq!(store.access_token(&third.access_token).await.unwrap(), None);
    assert_eq!(refused(store.refresh(&third.refresh_token, &client.client_id, LIFE, |s| Some(s.to_owned())).await), ExchangeRefusal::Invalid);
}

#[tokio::test]
async fn concurrent_refreshes_of_one_token_yield_one_pair() {
    let (_env, store, client) = setup().await;
    let (_, first) = redeem_and_open(&store, &client).await;
    let a = store.refresh(&first.refresh_token, &client.client_id, LIFE, |s| Some(s.to_owned()));
    let b = store.refresh(&first.refresh_token, &client.client_id, LIFE, |s| Some(s.to_owned()));
    let (a, b) = tokio::join!(a, b);
    assert_eq!([a.is_ok(), b.is_ok()].iter().filter(|ok| **ok).count(), 1, "{a:?} {b:?}");
}

#[tokio::test]
async fn refresh_and_revocation_belong_to_the_client_that_was_issued_the_token() {
    let (_env, store, client) = setup().await;
    let (other, _) = store.register_client(ClientRecord { client_id: String::new(), ..client.clone() }, false).await.unwrap();
    let (_, tokens) = redeem_and_open(&store, &client).await;
    assert_eq!(refused(store.refresh(&tokens.refresh_token, &other.client_id, LIFE, |s| Some(s.to_owned())).await), ExchangeRefusal::Invalid);
    store.revoke(&tokens.refresh_token, &other.client_id).await.unwrap();
    assert!(store.access_token(&tokens.access_token).await.unwrap().is_some(), "another client's revocation changes nothing");

    // Revoking an access token ends it alone; revoking the refresh token ends the grant.
    let (_, second) = store.refresh(&tokens.refresh_token, &client.client_id, LIFE, |s| Some(s.to_owned())).await.unwrap();
    store.revoke(&tokens.access_token, &client.client_id).await.unwrap();
    assert_eq!(store.access_token(&tokens.access_token).await.unwrap(), None);
    assert!(store.access_token(&second.access_token).await.unwrap().is_some());
    store.revoke(&second.refresh_token, &client.client_id).await.unwrap();
    assert_eq!(store.access_token(&second.access_token).await.unwrap(), None);
    assert_eq!(refused(store.refresh(&second.refresh_token, &client.client_id, LIFE, |s| Some(s.to_owned())).await), ExchangeRefusal::Invalid);
}

#[tokio::test]
async fn a_confidential_clients_secret_is_kept_as_a_hash() {
    let (env, store, client) = setup().await;
    let record = ClientRecord { token_endpoint_auth_method: "client_secret_basic".into(), ..client };
    let (record, secret) = store.register_client(record, true).await.unwrap();
    let secret = secret.expect("a confidential client gets a secret");
    let stored = store.client(&record.client_id).await.unwrap().unwrap();
    assert!(stored.secret_matches(&secret) && !stored.secret_matches("iacs_wrong"));
    assert!(!table_text(&env).await.contains(&secret));
    assert_eq!(store.client("mcpc_unknown").await.unwrap(), None);
}

#[tokio::test]
async fn an_expired_access_token_is_refused_and_its_refresh_token_still_works() {
    let (_env, store, client) = setup().await;
    let c = code(&store, &client).await;
    let record = store.redeem_code(&c).await.unwrap();
    let tokens = store.open_grant(&record, Lifetimes { access_secs: 0, refresh_secs: 3600 }).await.unwrap();
    assert_eq!(store.access_token(&tokens.access_token).await.unwrap(), None, "expired the moment it was issued");
    let (_, fresh) = store.refresh(&tokens.refresh_token, &client.client_id, LIFE, |s| Some(s.to_owned())).await.unwrap();
    assert!(store.access_token(&fresh.access_token).await.unwrap().is_some());
}
