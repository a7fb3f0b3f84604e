//! What the local cloud's work would be billed by in AWS, counted where the
//! local cloud plays Lambda and API Gateway: invocations and busy time per
//! function, HTTP API and Function URL requests, WebSocket messages in each
//! direction (in API Gateway's 32 KB units). DynamoDB and SQS usage is
//! counted by moto_server.py (`/_usage`). Read by the cost bench.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;
use store::deployment::FunctionId;

/// API Gateway bills WebSocket messages in 32 KB increments.
const WS_MESSAGE_UNIT: usize = 32 * 1024;

/// One function's invocations and the time its handler ran (what Lambda
/// bills per invocation, each rounded up to 1 ms).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FunctionUsage {
    pub invocations: u64,
    pub billed_ms: u64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    pub functions: BTreeMap<FunctionId, FunctionUsage>,
    pub http_api_requests: u64,
    pub function_url_requests: u64,
    /// Client → API frames (each also invokes the gateway function).
    pub websocket_messages_in: u64,
    /// `@connections` posts that reached a client.
    pub websocket_messages_out: u64,
}

impl Usage {
    /// What happened since `before`.
    pub fn since(&self, before: &Usage) -> Usage {
        let functions = self
            .functions
            .iter()
            .map(|(id, u)| {
                let b = before.functions.get(id).copied().unwrap_or_default();
                (*id, FunctionUsage { invocations: u.invocations - b.invocations, billed_ms: u.billed_ms - b.billed_ms })
            })
            .filter(|(_, u)| u.invocations > 0)
            .collect();
        Usage {
            functions,
            http_api_requests: self.http_api_requests - before.http_api_requests,
            function_url_requests: self.function_url_requests - before.function_url_requests,
            websocket_messages_in: self.websocket_messages_in - before.websocket_messages_in,
            websocket_messages_out: self.websocket_messages_out - before.websocket_messages_out,
        }
    }
}

#[derive(Debug, Default)]
pub struct Meter(Mutex<Usage>);

impl Meter {
    fn with(&self, f: impl FnOnce(&mut Usage)) {
        f(&mut self.0.lock().unwrap_or_else(|p| p.into_inner()));
    }

    pub fn snapshot(&self) -> Usage {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn invoked(&self, function: FunctionId, took: Duration) {
        let ms = took.as_micros().div_ceil(1000) as u64;
        self.with(|u| {
            let f = u.functions.entry(function).or_default();
            f.invocations += 1;
            f.billed_ms += ms.max(1);
        });
    }

    pub fn http_request(&self, streaming: bool) {
        self.with(|u| if streaming { u.function_url_requests += 1 } else { u.http_api_requests += 1 });
    }

    pub fn websocket_in(&self, bytes: usize) {
        self.with(|u| u.websocket_messages_in += messages(bytes));
    }

    pub fn websocket_out(&self, bytes: usize) {
        self.with(|u| u.websocket_messages_out += messages(bytes));
    }
}

fn messages(bytes: usize) -> u64 {
    bytes.div_ceil(WS_MESSAGE_UNIT).max(1) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_in_billing_units() {
        let meter = Meter::default();
        let before = meter.snapshot();
        meter.invoked(FunctionId::Chat, Duration::from_micros(1200));
        meter.invoked(FunctionId::Chat, Duration::from_micros(10));
        meter.websocket_out(100);
        meter.websocket_out(33 * 1024);
        meter.http_request(false);
        meter.http_request(true);
        let u = meter.snapshot().since(&before);
        assert_eq!(u.functions[&FunctionId::Chat], FunctionUsage { invocations: 2, billed_ms: 3 });
        assert_eq!((u.websocket_messages_out, u.http_api_requests, u.function_url_requests), (3, 1, 1));
        assert!(meter.snapshot().since(&meter.snapshot()).functions.is_empty());
    }
}
