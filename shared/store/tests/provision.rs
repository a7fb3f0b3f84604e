//! Provisioning is idempotent: a restart of the local cloud over the same
//! moto keeps every table, queue and item.

use aws_sdk_dynamodb::types::AttributeValue;
use store::deployment::{TableId, QUEUES, TABLES};
use store::testing::TestEnv;

#[tokio::test]
async fn provisioning_twice_keeps_everything() {
    let env = TestEnv::new().await;
    let table = env.config.table(TableId::ApiKeys).unwrap().to_owned();
    env.clients
        .dynamo
        .put_item()
        .table_name(&table)
        .item("keyHash", AttributeValue::S("h".into()))
        .item("userId", AttributeValue::S("u".into()))
        .send()
        .await
        .unwrap();
    let mut again = env.config.clone();
    store::provision::provision(&env.clients, &mut again, &env.prefix).await.unwrap();
    for t in TABLES {
        assert_eq!(again.table(t.id).unwrap(), env.config.table(t.id).unwrap());
    }
    for q in QUEUES {
        assert_eq!(again.queue_url(q.id).unwrap(), env.config.queue_url(q.id).unwrap());
    }
    let item = env.clients.dynamo.get_item().table_name(&table).key("keyHash", AttributeValue::S("h".into())).send().await.unwrap();
    assert!(item.item.is_some(), "provisioning again must not recreate tables");
}
