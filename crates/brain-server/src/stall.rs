//! A socket whose writes may not stall for good. hyper writes an answer for as
//! long as the peer takes it; a client that sends requests and never reads
//! the answers (a large briefing, pipelined reads of a 256 KiB focus) fills
//! the socket's buffers, and the write then waits forever, holding the
//! socket, its place under the socket cap, the credential's in-flight places
//! and, at shutdown, the server's exit (hyper's graceful shutdown waits for
//! every connection). [`StallGuard`] fails a write that the peer has not let
//! make progress for its limit, and hyper then drops the connection.
//!
//! Only a write that is waiting counts: an idle connection, or an SSE stream
//! with nothing to send, writes nothing and is never cut here (the header
//! deadline and the connection expiry deal with those). "Progress" is what the
//! kernel reports: Linux wakes a blocked writer only once about a third of the
//! socket's send buffer (which grows to 4 MiB) is free again, so an honest
//! reader must drain that much within the limit, and a trickling one that does
//! holds the socket only as long as the answers it asked for last, within the
//! per-credential caps.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

pub struct StallGuard<T> {
    inner: T,
    limit: Duration,
    /// Armed when a write first waits; disarmed by any write that goes on.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<T> StallGuard<T> {
    pub fn new(inner: T, limit: Duration) -> Self {
        Self {
            inner,
            limit,
            deadline: None,
        }
    }

    /// Pass on a write's outcome; a write fails with `TimedOut` once writes
    /// have waited `limit` in a row, counted from the first that waited after
    /// the last one that went on.
    fn watch<R>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<R>>,
    ) -> Poll<io::Result<R>> {
        if polled.is_ready() {
            self.deadline = None;
            return polled;
        }
        let limit = self.limit;
        let deadline = self
            .deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match deadline.as_mut().poll(cx) {
            Poll::Ready(()) => {
                metrics::counter!("brain_stalled_writes_total").increment(1);
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the peer took nothing of the answer for too long",
                )))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for StallGuard<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for StallGuard<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.watch(cx, polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.watch(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_flush(cx);
        this.watch(cx, polled)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.watch(cx, polled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const LIMIT: Duration = Duration::from_secs(30);

    #[tokio::test(start_paused = true)]
    async fn a_peer_that_stops_reading_is_cut_after_the_limit() {
        let (ours, _theirs) = tokio::io::duplex(64);
        let mut guarded = StallGuard::new(ours, LIMIT);
        let started = tokio::time::Instant::now();
        let err = guarded.write_all(&[b'x'; 1024]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= LIMIT, "{:?}", started.elapsed());
        assert!(started.elapsed() < LIMIT * 2, "{:?}", started.elapsed());
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_reader_that_keeps_reading_is_not_cut() {
        let (ours, mut theirs) = tokio::io::duplex(64);
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut buf = [0u8; 64];
            loop {
                // Each read comes well inside the limit, the whole far after it.
                tokio::time::sleep(LIMIT / 2).await;
                match theirs.read(&mut buf).await.unwrap() {
                    0 => return got,
                    n => got.extend_from_slice(&buf[..n]),
                }
            }
        });
        let mut guarded = StallGuard::new(ours, LIMIT);
        let started = tokio::time::Instant::now();
        guarded.write_all(&[b'y'; 640]).await.unwrap();
        guarded.shutdown().await.unwrap();
        drop(guarded);
        assert!(started.elapsed() > LIMIT * 3);
        assert_eq!(reader.await.unwrap(), vec![b'y'; 640]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_is_not_a_stall() {
        let (ours, mut theirs) = tokio::io::duplex(64);
        let mut guarded = StallGuard::new(ours, LIMIT);
        guarded.write_all(b"first").await.unwrap();
        tokio::time::sleep(LIMIT * 3).await;
        let mut buf = [0u8; 5];
        theirs.read_exact(&mut buf).await.unwrap();
        guarded.write_all(b"again").await.unwrap();
        theirs.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"again");
    }
}
