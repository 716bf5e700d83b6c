//! Reply bodies written while the data is read: the engine writes into a
//! [`ChunkWriter`] on the blocking pool, which hands chunks of about
//! [`CHUNK`] bytes through a bounded channel to the connection, so the
//! server holds at most a few chunks of a reply (plus what the read itself
//! needs), whatever the reply's size, and a slow client slows the read
//! instead of growing a buffer.
//!
//! Status and headers are decided before the first byte: a handler checks
//! what can fail (the resource exists, the query parses) and only then
//! returns a streamed body. A failure after that (a backend error, a damaged
//! fragment) cannot change the status any more: the body is cut off (the
//! connection is closed without the chunked encoding's last chunk), so a
//! client never takes a truncated reply for a whole one. A client that goes
//! away stops the read at its next chunk.

use std::io::{self, Write};

use axum::body::{Body, Bytes};
use tokio::sync::mpsc;

/// The size of the chunks sent to the connection.
pub const CHUNK: usize = 64 * 1024;

/// Chunks on their way to the connection at most (besides the one being
/// filled).
const IN_FLIGHT: usize = 4;

type Item = Result<Bytes, io::Error>;

/// A `Write` that sends what is written to a streamed body in chunks of
/// [`CHUNK`] bytes. Dropped without [`ChunkWriter::finish`], it cuts the
/// body off.
pub struct ChunkWriter {
    buf: Vec<u8>,
    tx: Option<mpsc::Sender<Item>>,
}

impl ChunkWriter {
    fn send(&mut self, item: Item) -> io::Result<()> {
        let gone = || io::Error::new(io::ErrorKind::BrokenPipe, "the client closed the connection");
        let tx = self.tx.as_ref().ok_or_else(gone)?;
        tx.blocking_send(item).map_err(|_| gone())
    }

    fn send_buffer(&mut self) -> io::Result<()> {
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        self.send(Ok(Bytes::from(chunk)))
    }

    /// Sends what is left and ends the body.
    ///
    /// # Errors
    /// The client went away.
    pub fn finish(mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.send_buffer()?;
        }
        self.tx = None;
        Ok(())
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send_buffer()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        // Chunks go out full; `finish` sends the rest.
        Ok(())
    }
}

impl Drop for ChunkWriter {
    fn drop(&mut self) {
        if self.tx.is_some() {
            // Not finished: an error (or a panic) mid-reply. Cut the body off.
            let _ = self.send(Err(io::Error::other("the reply failed while it was being written")));
        }
    }
}

/// A body written by `produce` on the blocking pool as the connection
/// takes it (see the module's comment). An error `produce` returns cuts
/// the body off; so does a panic.
pub fn streamed(produce: impl FnOnce(&mut ChunkWriter) -> io::Result<()> + Send + 'static) -> Body {
    let (tx, rx) = mpsc::channel::<Item>(IN_FLIGHT);
    tokio::task::spawn_blocking(move || {
        let mut w = ChunkWriter { buf: Vec::with_capacity(CHUNK), tx: Some(tx) };
        if produce(&mut w).is_ok() {
            let _ = w.finish();
        }
    });
    let chunks = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) });
    Body::from_stream(chunks)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn collect(body: Body) -> Result<Vec<u8>, axum::Error> {
        axum::body::to_bytes(body, usize::MAX).await.map(|b| b.to_vec())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_streamed_body_carries_everything_written() {
        let body = streamed(|w| {
            for i in 0..50_000u32 {
                write!(w, "{i},")?;
            }
            Ok(())
        });
        let got = collect(body).await.unwrap();
        let want: String = (0..50_000u32).map(|i| format!("{i},")).collect();
        assert_eq!(String::from_utf8(got).unwrap(), want);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failure_mid_reply_cuts_the_body_off() {
        let body = streamed(|w| {
            w.write_all(&[b'x'; CHUNK * 3])?;
            Err(io::Error::other("backend gone"))
        });
        assert!(collect(body).await.is_err());
        let panics = streamed(|w| {
            w.write_all(b"partial")?;
            panic!("a bug mid-reply");
        });
        assert!(collect(panics).await.is_err());
    }
}
