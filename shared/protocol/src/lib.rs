//! The wire contract: event schema (every event type of the streaming
//! protocol), API request/response types, ids and the JSON error shape.
//! No AWS and no I/O, so clients, functions and tests share one definition.

pub mod attachments;
pub mod error;
pub mod events;
pub mod ids;
pub mod session;

pub use error::{ErrorBody, ErrorCode};
pub use events::{Event, EventError, EventPayload, EventType, StoredEvent, WsFrame};
pub use ids::UserId;
