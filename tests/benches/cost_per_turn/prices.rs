//! Public AWS on-demand list prices, us-east-1, arm64 — the only place the
//! cost bench takes prices from. As published on the AWS pricing pages for
//! Lambda, DynamoDB, SQS and API Gateway, checked 2025-06-01 (DynamoDB
//! on-demand after the 2024-11-01 reduction). No free tier is applied:
//! these are what usage costs once past it. Re-check before quoting.

pub const PRICES_DATE: &str = "2025-06-01";

/// Lambda, arm64: per GB-second of duration (first tier) and per request.
pub const LAMBDA_GB_SECOND: f64 = 0.000_013_333_4;
pub const LAMBDA_REQUEST: f64 = 0.20 / 1e6;

/// DynamoDB on-demand: per write request unit (1 KB) and read request unit (4 KB).
pub const DYNAMODB_WRITE_UNIT: f64 = 0.625 / 1e6;
pub const DYNAMODB_READ_UNIT: f64 = 0.125 / 1e6;

/// SQS standard queue: per request (each 64 KB chunk of payload is one).
pub const SQS_REQUEST: f64 = 0.40 / 1e6;

/// API Gateway HTTP API: per request (each 512 KB is one), first 300 M a month.
pub const HTTP_API_REQUEST: f64 = 1.00 / 1e6;

/// API Gateway WebSocket API: per message (32 KB units), first 1 B a month,
/// and per connection minute.
pub const WEBSOCKET_MESSAGE: f64 = 1.00 / 1e6;
pub const WEBSOCKET_CONNECTION_MINUTE: f64 = 0.25 / 1e6;

/// EventBridge Scheduler: per scheduled invocation (the sweep's schedule).
pub const SCHEDULER_INVOCATION: f64 = 1.00 / 1e6;
