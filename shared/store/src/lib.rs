//! The AWS side of the instance: typed configuration, the deployment
//! definition (tables, queues, functions, routes — the one source that
//! `infra/template.yaml` and the local cloud agree with), and the DynamoDB /
//! SQS repositories every function is built from.

pub mod api_keys;
pub mod aws;
pub mod config;
pub mod connections;
pub mod counting;
pub mod data;
pub mod deployment;
pub mod error;
pub mod event_log;
pub mod event_writer;
#[cfg(feature = "test-support")]
pub mod fake_ws;
pub mod oauth;
pub mod provision;
pub mod publisher;
pub mod runs;
pub mod suspensions;
pub mod sweep_schedule;
#[cfg(feature = "test-support")]
pub mod testing;
pub mod threads;

pub use api_keys::ApiKeys;
pub use aws::AwsClients;
pub use config::Config;
pub use error::StoreError;
pub use event_log::EventLog;
pub use event_writer::EventWriter;
pub use publisher::Publisher;
pub use runs::Runs;
pub use suspensions::Suspensions;
pub use threads::Threads;
