//! A response body with a watcher that sees its frames and is dropped when the body ends, fails
//! or is dropped (the client went away): where the connection layer stops counting a request
//! in flight, and the request log writes its line.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use bytes::Bytes;
use http_body::{Frame, SizeHint};

/// Sees a response body go out; does its work when dropped (at the body's end, at the latest).
pub(crate) trait BodyWatcher: Send + Unpin + 'static {
    /// A frame on its way to the client (data or trailers).
    fn frame(&mut self, _frame: &Frame<Bytes>) {}
    /// The body ran to its end (not called when it failed or was dropped before).
    fn ended(&mut self) {}
}

/// `inner`, with `watcher` watching it.
pub(crate) fn watched(inner: Body, watcher: impl BodyWatcher) -> Body {
    Body::new(WatchedBody {
        inner,
        watcher: Some(watcher),
    })
}

struct WatchedBody<W: BodyWatcher> {
    inner: Body,
    watcher: Option<W>,
}

impl<W: BodyWatcher> http_body::Body for WatchedBody<W> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(watcher) = &mut self.watcher {
                    watcher.frame(frame);
                }
            }
            Poll::Ready(None) => {
                if let Some(mut watcher) = self.watcher.take() {
                    watcher.ended();
                }
            }
            Poll::Ready(Some(Err(_))) => self.watcher = None,
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<W: BodyWatcher> Drop for WatchedBody<W> {
    fn drop(&mut self) {
        if let Some(mut watcher) = self.watcher.take() {
            // An empty body may never be polled: it has ended all the same.
            if http_body::Body::is_end_stream(&self.inner) {
                watcher.ended();
            }
        }
    }
}
