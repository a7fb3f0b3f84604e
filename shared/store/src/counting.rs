//! Counts the requests a DynamoDB client sends, per operation (each attempt,
//! retries included), so tests and the benchmark can state how many requests
//! an append or a publish costs instead of guessing.

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[derive(Clone, Debug, Default)]
pub struct RequestCounter {
    counts: Arc<Mutex<BTreeMap<String, u64>>>,
}

impl RequestCounter {
    /// A copy of `client` whose requests are counted by the returned counter.
    pub fn instrument(client: &aws_sdk_dynamodb::Client) -> (aws_sdk_dynamodb::Client, RequestCounter) {
        let counter = RequestCounter::default();
        let conf = client.config().to_builder().interceptor(counter.clone()).build();
        (aws_sdk_dynamodb::Client::from_conf(conf), counter)
    }

    /// Requests per operation name (`PutItem`, `Query`, ...).
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        self.counts.lock().map(|m| m.clone()).unwrap_or_default()
    }

    pub fn total(&self) -> u64 {
        self.snapshot().values().sum()
    }

    pub fn get(&self, operation: &str) -> u64 {
        self.snapshot().get(operation).copied().unwrap_or(0)
    }

    pub fn reset(&self) {
        if let Ok(mut m) = self.counts.lock() {
            m.clear();
        }
    }
}

impl Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        let op = cfg.load::<Metadata>().map(|m| m.name().to_owned()).unwrap_or_else(|| "unknown".into());
        if let Ok(mut m) = self.counts.lock() {
            *m.entry(op).or_default() += 1;
        }
        Ok(())
    }
}
