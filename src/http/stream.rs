//! Large JSON answers streamed as they are written: a renderer runs on a blocking thread and
//! hands the body over in chunks through a small bounded channel, so an answer is never held
//! whole in memory and a slow client slows the renderer instead of growing a buffer. A client
//! that goes away stops the renderer at its next chunk.

use std::convert::Infallible;
use std::io::{self, Write};

use axum::body::Body;
use axum::http::HeaderValue;
use axum::http::header::CONTENT_TYPE;
use axum::response::Response;
use bytes::Bytes;
use tokio::sync::mpsc;

/// Bytes per chunk handed to the connection.
const CHUNK: usize = 64 * 1024;
/// Chunks rendered ahead of the connection.
const AHEAD: usize = 4;

/// Writes into chunks and sends each full one down the channel.
struct ChunkWriter {
    buf: Vec<u8>,
    tx: mpsc::Sender<Bytes>,
}

impl ChunkWriter {
    fn send(&mut self) -> io::Result<()> {
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        self.tx
            .blocking_send(Bytes::from(chunk))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "client went away"))
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.send()
    }
}

/// A 200 `application/json` response whose body `render` writes on a blocking thread.
pub fn json_stream<F>(render: F) -> Response
where
    F: FnOnce(&mut dyn Write) -> io::Result<()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<Bytes>(AHEAD);
    crate::telemetry::spawn_blocking(move || {
        let mut writer = ChunkWriter {
            buf: Vec::with_capacity(CHUNK),
            tx,
        };
        // An error here means the client went away: nothing left to do.
        let _ = render(&mut writer).and_then(|()| writer.flush());
    });
    let chunks = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|chunk| (Ok::<_, Infallible>(chunk), rx))
    });
    let mut response = Response::new(Body::from_stream(chunks));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
