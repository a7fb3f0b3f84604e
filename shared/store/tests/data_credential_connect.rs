//! A credential's OAuth2 connection against moto: connect states are
//! single-use, expire and are bound to the user and credential; tokens are
//! sealed at rest, bound to the user who connected and the credential,
//! refreshed only over the token they replace, and gone with the credential.

mod data_support;

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::json;
use protocol::UserId;
use store::data::credentials::{NewCredential, SecretData};
use store::deployment::TableId;

const ACCESS: &str = "ya29.ACCESS-token-7f3e";
const REFRESH: &str = "1//REFRESH-token-9a1c";

async fn credential(data: &store::data::InstanceData, project: &str, name: &str) -> String {
    data.credentials
        .create(NewCredential {
            name: name.into(),
            kind: "googleSheetsOAuth2Api".into(),
            description: None,
            project_id: project.into(),
            is_managed: false,
            is_global: false,
            secret: SecretData::new(json!({"clientId": "id", "clientSecret": "sec"})),
        })
        .await
        .unwrap()
        .id
}

#[tokio::test]
async fn connect_states_are_single_use_bound_and_expiring() {
    let (env, data) = data_support::data().await;
    let (alice, home) = data_support::user(&data, "alice").await;
    let c = &data.credentials;
    let id = credential(&data, &home.id, "Sheets").await;

    let state = c.begin_connect(&id, &alice, "verifier-0123456789-0123456789-0123456789-abc", "https://x/instance-ai/oauth2/callback").await.unwrap();
    assert!(state.starts_with(&format!("{id}.")) && state.len() > id.len() + 40);
    let pending = c.take_connect(&state).await.unwrap().expect("redeemed once");
    assert_eq!((pending.credential_id.as_str(), pending.user_id.as_str(), pending.redirect_uri.as_str()), (id.as_str(), alice.0.as_str(), "https://x/instance-ai/oauth2/callback"));
    assert_eq!(pending.code_verifier.expose(), &json!("verifier-0123456789-0123456789-0123456789-abc"));
    assert!(c.take_connect(&state).await.unwrap().is_none(), "a second redemption gets nothing");
    for forged in [format!("{id}.x"), "no-dot".to_owned(), format!("other.{}", &state[id.len() + 1..]), String::new(), format!("{id}.{}", "a".repeat(500))] {
        assert!(c.take_connect(&forged).await.unwrap().is_none(), "{forged}");
    }

    // An expired state is refused, and the next start removes it.
    let stale = c.begin_connect(&id, &alice, "v", "https://x/cb").await.unwrap();
    let table = env.config.table(TableId::Instance).unwrap().to_owned();
    let items = env.clients.dynamo.query().table_name(&table).key_condition_expression("pk = :p").expression_attribute_values(":p", AttributeValue::S(format!("cred#{id}"))).send().await.unwrap();
    let connect_keys: Vec<_> = items.items().iter().filter(|i| i["sk"].as_s().unwrap().starts_with("connect#")).map(|i| i["sk"].clone()).collect();
    assert_eq!(connect_keys.len(), 1);
    env.clients
        .dynamo
        .update_item()
        .table_name(&table)
        .key("pk", AttributeValue::S(format!("cred#{id}")))
        .key("sk", connect_keys[0].clone())
        .update_expression("SET expiresAt = :past")
        .expression_attribute_values(":past", AttributeValue::N("1".into()))
        .send()
        .await
        .unwrap();
    let next = c.begin_connect(&id, &alice, "v2", "https://x/cb").await.unwrap();
    assert!(c.take_connect(&stale).await.unwrap().is_none(), "expired, and removed");
    assert!(c.take_connect(&next).await.unwrap().is_some());
    assert!(c.begin_connect("no-such-credential", &alice, "v", "https://x/cb").await.is_err());
}

#[tokio::test]
async fn tokens_are_sealed_bound_and_refreshed_over_the_one_they_replace() {
    let (env, data) = data_support::data().await;
    let (alice, home) = data_support::user(&data, "alice").await;
    let c = &data.credentials;
    let id = credential(&data, &home.id, "Sheets").await;
    let other = credential(&data, &home.id, "Other").await;
    assert!(c.connection(&id).await.unwrap().is_none() && c.decrypt_tokens(&id).await.unwrap().is_none());

    let tokens = json!({"access_token": ACCESS, "refresh_token": REFRESH, "token_type": "Bearer", "expires_at": 1_900_000_000, "scope": "s1 s2"});
    c.connect(&id, &alice, "code-1", &SecretData::new(tokens.clone())).await.unwrap();
    assert!(c.connected_with(&id, &alice, "code-1").await.unwrap(), "made with that code");
    assert!(!c.connected_with(&id, &alice, "code-2").await.unwrap() && !c.connected_with(&other, &alice, "code-1").await.unwrap());
    assert!(!c.connected_with(&id, &UserId::from("bob".to_owned()), "code-1").await.unwrap(), "by alice");
    let conn = c.connection(&id).await.unwrap().expect("connected");
    assert_eq!((conn.connected_by.as_str(), conn.token_expires_at, conn.scope.as_deref()), (alice.0.as_str(), Some(1_900_000_000), Some("s1 s2")));
    assert!(!format!("{conn:?}").contains("ACCESS") && !serde_json::to_string(&conn).unwrap().contains("REFRESH"));
    assert_eq!(c.decrypt_tokens(&id).await.unwrap().unwrap().expose(), &tokens);

    // at rest: no token in the item
    let table = env.config.table(TableId::Instance).unwrap().to_owned();
    let key = |pk: &str| [("pk".to_owned(), AttributeValue::S(format!("cred#{pk}"))), ("sk".to_owned(), AttributeValue::S("oauth".into()))].into_iter().collect::<std::collections::HashMap<_, _>>();
    let raw = env.clients.dynamo.get_item().table_name(&table).set_key(Some(key(&id))).send().await.unwrap().item.unwrap();
    assert!(!format!("{raw:?}").contains("ACCESS-token") && !format!("{raw:?}").contains("REFRESH-token"));

    // bound: moved to another credential, or claimed by another user, it does not open
    let mut moved = raw.clone();
    moved.insert("pk".into(), AttributeValue::S(format!("cred#{other}")));
    env.clients.dynamo.put_item().table_name(&table).set_item(Some(moved)).send().await.unwrap();
    assert!(c.decrypt_tokens(&other).await.is_err(), "sealed for its own credential");
    let mut claimed = raw.clone();
    claimed.insert("connectedBy".into(), AttributeValue::S("mallory".into()));
    env.clients.dynamo.put_item().table_name(&table).set_item(Some(claimed)).send().await.unwrap();
    assert!(c.decrypt_tokens(&id).await.is_err(), "sealed for the user who connected");
    env.clients.dynamo.put_item().table_name(&table).set_item(Some(raw)).send().await.unwrap();

    // a refresh writes over the token it replaced only
    let fresh = json!({"access_token": "ya29.FRESH", "refresh_token": REFRESH, "expires_at": 1_900_003_600});
    assert!(!c.refresh_tokens(&id, "ya29.not-the-current-one", &SecretData::new(fresh.clone())).await.unwrap());
    assert!(c.refresh_tokens(&id, ACCESS, &SecretData::new(fresh.clone())).await.unwrap());
    assert_eq!(c.decrypt_tokens(&id).await.unwrap().unwrap().expose(), &fresh);
    assert_eq!(c.connection(&id).await.unwrap().unwrap().connected_by, alice.0, "still the user who connected");
    assert!(c.connected_with(&id, &alice, "code-1").await.unwrap(), "a refresh keeps what the connection was made with");
    assert!(!c.refresh_tokens(&id, ACCESS, &SecretData::new(tokens)).await.unwrap(), "a late, racing refresh loses");

    c.delete(&id).await.unwrap();
    assert!(c.connection(&id).await.unwrap().is_none(), "gone with the credential");
    assert!(c.connect(&id, &alice, "code-2", &SecretData::new(fresh)).await.is_err(), "no connection for a deleted credential");
}
