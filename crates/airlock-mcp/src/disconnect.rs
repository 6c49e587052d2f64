//! Noticing at once that the MCP client went away: it closes the proxy's stdin. rmcp
//! notices too, but it lets in-flight requests finish for a few seconds first, and MCP
//! clients kill a server that does not exit within about two seconds of closing its
//! stdin. A call waiting for a person would then leave its approval pending in the inbox,
//! for nobody; with the end of stdin seen here, it is cancelled right away.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::watch;

/// Reads like `inner`, and sets `gone` once `inner` ends (or fails).
pub struct WatchEof<R> {
    inner: R,
    gone: Arc<watch::Sender<bool>>,
}

impl<R> WatchEof<R> {
    pub fn new(inner: R, gone: Arc<watch::Sender<bool>>) -> WatchEof<R> {
        WatchEof { inner, gone }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for WatchEof<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let room = buf.remaining() > 0;
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let ended = match &polled {
            // A read into a buffer with room that adds nothing is the end of the stream.
            Poll::Ready(Ok(())) => room && buf.filled().len() == before,
            Poll::Ready(Err(_)) => true,
            Poll::Pending => false,
        };
        if ended {
            self.gone.send_replace(true);
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn the_end_of_the_input_is_noticed_and_not_before() {
        let (gone, watching) = watch::channel(false);
        let mut input = WatchEof::new(&b"{\"jsonrpc\":\"2.0\"}\n"[..], Arc::new(gone));
        let mut line = [0u8; 8];
        input.read_exact(&mut line).await.unwrap();
        assert!(!*watching.borrow());
        let mut rest = Vec::new();
        input.read_to_end(&mut rest).await.unwrap();
        assert!(*watching.borrow());
    }
}
