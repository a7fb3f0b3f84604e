//! `local-cloud create-key` prints a key once; only its hash is stored.

use store::deployment::TableId;
use store::testing::TestEnv;

#[tokio::test]
async fn create_key_prints_a_working_key_and_stores_only_its_hash() {
    let env = TestEnv::new().await;
    let table = env.config.table(TableId::ApiKeys).unwrap().to_owned();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_local-cloud"))
        .args(["create-key", "carol"])
        .env("AWS_REGION", "us-east-1")
        .env("API_KEYS_TABLE", &table)
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let key = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(key.starts_with("ia_") && key.len() > 40, "{key}");

    let keys = store::ApiKeys::new(env.clients.dynamo.clone(), &table);
    assert_eq!(keys.lookup(&key).await.unwrap().map(|u| u.0), Some("carol".to_owned()));
    assert_eq!(keys.lookup("ia_wrong").await.unwrap(), None);

    // The table holds the SHA-256 of the key, never the key.
    let items = env.clients.dynamo.scan().table_name(&table).send().await.unwrap().items.unwrap_or_default();
    let dump = format!("{items:?}");
    assert!(!dump.contains(&key), "plaintext key stored");
    assert!(dump.contains(&store::api_keys::hash_key(&key)));

    // Bad input is refused with a message.
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_local-cloud"))
        .args(["create-key", "no/slashes"])
        .env("AWS_REGION", "us-east-1")
        .env("API_KEYS_TABLE", &table)
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid user id"));
}
