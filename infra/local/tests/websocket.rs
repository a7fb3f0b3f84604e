//! The WebSocket API emulation and its `@connections` management API,
//! through a real WebSocket client and the AWS SDK client.

mod common;

use aws_sdk_apigatewaymanagement::primitives::Blob;
use common::{cloud, ALICE_KEY};
use futures::{SinkExt, StreamExt};
use std::time::Duration;
use tokio_tungstenite::tungstenite::{self, Message};

fn management_client(base_url: &str) -> aws_sdk_apigatewaymanagement::Client {
    store::testing::ensure_test_credentials();
    let conf = aws_sdk_apigatewaymanagement::Config::builder()
        .behavior_version(aws_sdk_apigatewaymanagement::config::BehaviorVersion::latest())
        .http_client(store::aws::https_client())
        .region(aws_sdk_apigatewaymanagement::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_apigatewaymanagement::config::Credentials::new("k", "s", None, None, "test"))
        .endpoint_url(base_url)
        .build();
    aws_sdk_apigatewaymanagement::Client::from_conf(conf)
}

#[tokio::test]
async fn connect_requires_a_valid_token() {
    let cloud = cloud().await;
    for url in [cloud.ws_url(), format!("{}?token=wrong", cloud.ws_url())] {
        match tokio_tungstenite::connect_async(&url).await {
            Err(tungstenite::Error::Http(resp)) => {
                assert_eq!(resp.status().as_u16(), 401, "{url}");
                let body: serde_json::Value = serde_json::from_slice(resp.body().as_deref().unwrap_or_default()).unwrap();
                assert_eq!(body["error"]["code"], "unauthorized");
            }
            other => panic!("{url}: expected a 401 refusal, got {:?}", other.map(|_| "a connection")),
        }
    }
    let (ws, resp) = tokio_tungstenite::connect_async(format!("{}?token={ALICE_KEY}", cloud.ws_url())).await.unwrap();
    assert_eq!(resp.status().as_u16(), 101);
    drop(ws);
    cloud.shutdown().await;
}

/// The connection id the server assigned: `$default` answers through the
/// management API, so an unknown action reaches the client as an error frame;
/// the id itself is found through the connections table owner lookup below.
async fn connect(cloud: &local_cloud::Running) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    let (ws, _) = tokio_tungstenite::connect_async(format!("{}?token={ALICE_KEY}", cloud.ws_url())).await.unwrap();
    ws
}

async fn only_connection_id(cloud: &local_cloud::Running) -> String {
    let table = cloud.app.config.table(store::deployment::TableId::Connections).unwrap();
    let items = cloud.app.clients.dynamo.scan().table_name(table).send().await.unwrap().items.unwrap_or_default();
    let ids: Vec<String> = items
        .iter()
        .filter_map(|i| i.get("pk")?.as_s().ok()?.strip_prefix("conn#").map(str::to_owned))
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids[0].clone()
}

#[tokio::test]
async fn frames_route_by_action_and_answers_come_back_through_post_to_connection() {
    let cloud = cloud().await;
    let mut ws = connect(&cloud).await;
    ws.send(Message::Text(r#"{"action":"dance"}"#.into())).await.unwrap();
    let frame = tokio::time::timeout(Duration::from_secs(5), ws.next()).await.unwrap().unwrap().unwrap();
    let body: serde_json::Value = serde_json::from_str(frame.to_text().unwrap()).unwrap();
    assert_eq!(body["error"]["code"], "bad_request", "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("dance"));
    cloud.shutdown().await;
}

#[tokio::test]
async fn management_api_posts_gets_deletes_and_answers_gone_for_closed_connections() {
    let cloud = cloud().await;
    let mut ws = connect(&cloud).await;
    let id = only_connection_id(&cloud).await;
    let mgmt = management_client(&cloud.base_url());

    // POST reaches the client.
    mgmt.post_to_connection().connection_id(&id).data(Blob::new(r#"{"hello":1}"#)).send().await.unwrap();
    let frame = tokio::time::timeout(Duration::from_secs(5), ws.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(frame.to_text().unwrap(), r#"{"hello":1}"#);

    // GET describes it.
    let info = mgmt.get_connection().connection_id(&id).send().await.unwrap();
    assert_eq!(info.identity().and_then(|i| i.source_ip()), Some("127.0.0.1"));
    assert!(info.connected_at().is_some());

    // The client leaves; $disconnect forgets it and a POST is 410 Gone.
    ws.close(None).await.unwrap();
    drop(ws);
    let mut gone = false;
    for _ in 0..50 {
        match mgmt.post_to_connection().connection_id(&id).data(Blob::new("x")).send().await {
            Err(e) if e.as_service_error().is_some_and(|s| s.is_gone_exception()) => {
                gone = true;
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    assert!(gone, "POST to a closed connection must answer 410 Gone");
    // $disconnect (which runs right after the connection leaves the
    // registry) removes the connection record too.
    let table = cloud.app.config.table(store::deployment::TableId::Connections).unwrap();
    let mut left = -1;
    for _ in 0..50 {
        left = cloud.app.clients.dynamo.scan().table_name(table).consistent_read(true).send().await.unwrap().count;
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(left, 0, "connection record left behind after $disconnect");

    // DELETE on a live connection closes the client's socket.
    let mut ws = connect(&cloud).await;
    let id = only_connection_id(&cloud).await;
    mgmt.delete_connection().connection_id(&id).send().await.unwrap();
    let end = tokio::time::timeout(Duration::from_secs(5), ws.next()).await.unwrap();
    assert!(matches!(end, Some(Ok(Message::Close(_))) | None), "{end:?}");
    let err = mgmt.get_connection().connection_id(&id).send().await.unwrap_err();
    assert!(err.as_service_error().is_some_and(|s| s.is_gone_exception()));
    cloud.shutdown().await;
}
