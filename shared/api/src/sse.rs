//! The streaming response body of the SSE endpoint: either a fixed body (an
//! error answer) or the chunks a producer task sends through a channel.
//! When the client goes away the runtime drops the body, the channel closes,
//! and the producer notices (`Sender::closed`) and stops querying.

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// `http_body::Body<Data = Bytes, Error = Infallible> + Send + Unpin + 'static`.
#[derive(Debug)]
pub struct SseBody {
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    Full(Option<Bytes>),
    Channel(mpsc::Receiver<Bytes>),
}

impl SseBody {
    /// A body of one chunk (error answers, tests).
    pub fn full(bytes: impl Into<Bytes>) -> SseBody {
        SseBody { inner: Inner::Full(Some(bytes.into())) }
    }

    /// A streamed body and the sender that feeds it (a small buffer: the
    /// producer waits for a slow client instead of piling up frames).
    pub fn channel() -> (mpsc::Sender<Bytes>, SseBody) {
        let (tx, rx) = mpsc::channel(32);
        (tx, SseBody { inner: Inner::Channel(rx) })
    }
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.get_mut().inner {
            Inner::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Inner::Channel(rx) => rx.poll_recv(cx).map(|chunk| chunk.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.inner, Inner::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Inner::Full(None) => SizeHint::with_exact(0),
            Inner::Channel(_) => SizeHint::default(),
        }
    }
}
