//! A thread's live frames for the SSE endpoint, pushed rather than polled:
//! the events function connects to the WebSocket API the way a browser does
//! (`$connect` with `?token=<the caller's key>`, then
//! `{"action":"subscribe","threadId","lastEventId"}`), so the gateway's
//! replaying → live hand-off (`handlers::gateway`) and the publishers'
//! `PostToConnection` deliver every durable event after the cursor once, in
//! order, and ephemeral frames as they are published. A streaming Lambda
//! cannot be pushed to, but it can hold an outbound WebSocket.

use crate::ApiError;
use futures::{SinkExt, StreamExt};
use protocol::events::{ClientAction, Event, WsFrame};
use protocol::ids::ThreadId;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// What arrives on the subscription.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Durable(u64, Event),
    Ephemeral(Event),
    /// The gateway's acknowledgement: live after `cursor`.
    Subscribed { cursor: u64 },
    /// The gateway's error answer (`{"error":{…}}`): the subscription is off.
    Refused(String),
}

/// One subscribed WebSocket connection.
pub struct LiveFeed {
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

fn unavailable(what: &str, e: impl std::fmt::Display) -> ApiError {
    ApiError::Unavailable(format!("live feed: {what}: {e}"))
}

impl LiveFeed {
    /// Opens a connection to the WebSocket API at `url` as the owner of `key`.
    pub async fn connect(url: &str, key: &str) -> Result<LiveFeed, ApiError> {
        let token = percent_encoding::utf8_percent_encode(key, percent_encoding::NON_ALPHANUMERIC);
        let sep = if url.contains('?') { '&' } else { '?' };
        let request = format!("{url}{sep}token={token}");
        let connector = tokio_tungstenite::Connector::Rustls(sdk_http::tls_config());
        // Nagle off: frames are small and latency is the point.
        let (socket, _) = tokio_tungstenite::connect_async_tls_with_config(request, None, true, Some(connector))
            .await
            .map_err(|e| unavailable("connect", e))?;
        Ok(LiveFeed { socket })
    }

    /// Subscribes to `thread` after `cursor`: the gateway replays what the
    /// log holds beyond it, then goes live.
    pub async fn subscribe(&mut self, thread: &ThreadId, cursor: u64) -> Result<(), ApiError> {
        let action = ClientAction::Subscribe { thread_id: thread.0.clone(), last_event_id: Some(cursor) };
        let text = serde_json::to_string(&action).map_err(|e| ApiError::Internal(e.to_string()))?;
        self.socket.send(Message::Text(text.into())).await.map_err(|e| unavailable("subscribe", e))
    }

    /// The next frame; `None` once the connection is closed.
    pub async fn next(&mut self) -> Option<Incoming> {
        loop {
            let text = match self.socket.next().await? {
                Ok(Message::Text(t)) => t.to_string(),
                Ok(Message::Binary(b)) => String::from_utf8_lossy(&b).into_owned(),
                Ok(Message::Close(_)) | Err(_) => return None,
                // Pings are answered by the library on the next read.
                Ok(_) => continue,
            };
            if let Some(incoming) = parse(&text) {
                return Some(incoming);
            }
            tracing::debug!(frame = %text, "live feed: frame ignored");
        }
    }

    /// Closes the connection (the gateway's `$disconnect` forgets it).
    pub async fn close(mut self) {
        let _ = self.socket.close(None).await;
    }
}

/// One text frame from the gateway or a publisher.
pub fn parse(text: &str) -> Option<Incoming> {
    if let Ok(frame) = serde_json::from_str::<WsFrame>(text) {
        return Some(match frame.id {
            Some(id) => Incoming::Durable(id, frame.event),
            None => Incoming::Ephemeral(frame.event),
        });
    }
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    if let Some(error) = value.get("error") {
        let message = error.get("message").and_then(|m| m.as_str()).unwrap_or("refused");
        return Some(Incoming::Refused(message.to_owned()));
    }
    match value.get("action").and_then(|a| a.as_str()) {
        Some("subscribed") => Some(Incoming::Subscribed { cursor: value.get("lastEventId").and_then(|c| c.as_u64()).unwrap_or(0) }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::events::{EventPayload, Status};

    #[test]
    fn frames_acks_and_refusals_are_told_apart() {
        let event = Event::new("r1", "agent-001", EventPayload::Status(Status { message: "m".into() }));
        assert_eq!(parse(&WsFrame::durable(7, event.clone()).to_json()), Some(Incoming::Durable(7, event.clone())));
        assert_eq!(parse(&WsFrame::ephemeral(event.clone()).to_json()), Some(Incoming::Ephemeral(event)));
        assert_eq!(
            parse(r#"{"action":"subscribed","threadId":"t","lastEventId":12}"#),
            Some(Incoming::Subscribed { cursor: 12 })
        );
        assert_eq!(
            parse(r#"{"error":{"code":"unavailable","message":"too busy"}}"#),
            Some(Incoming::Refused("too busy".into()))
        );
        assert_eq!(parse(r#"{"action":"unsubscribed","threadId":"t"}"#), None);
        assert_eq!(parse("not json"), None);
    }
}
