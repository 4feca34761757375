//! Graceful shutdown of the real binary: SIGTERM stops accepting connections, answers every
//! request already in flight, stores what it acknowledged, and exits 0; a request that never
//! completes is cut at `--shutdown-grace-secs` instead of holding the process.
//!
//! The requests are written by hand over TCP so the test decides when each is "in flight": the
//! connection first serves a `GET /health` (so the server has accepted it), then the push's
//! head and half its body are sent; the rest follows only after the signal.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::server::{Server, create_team, http_client};

/// Requests in flight when the signal arrives.
const IN_FLIGHT: usize = 20;
/// Heart-rate samples per push.
const SAMPLES: usize = 10;

/// Push `n`: `SAMPLES` heart-rate samples of its own minute range.
fn push(n: usize) -> Vec<u8> {
    let base = chrono::DateTime::parse_from_rfc3339("2025-03-01T00:00:00Z").unwrap();
    let samples: Vec<Value> = (0..SAMPLES)
        .map(|i| {
            let at = base + chrono::Duration::minutes((n * SAMPLES + i) as i64);
            json!({"timestamp": at.to_rfc3339(), "unit": "bpm", "value": 60 + i})
        })
        .collect();
    json!({"provider": "apple_health_kit", "timeseries": {"heartrate": samples}})
        .to_string()
        .into_bytes()
}

/// The address `host:port` of a server's base URL.
fn addr(server: &Server) -> String {
    server.base.trim_start_matches("http://").to_owned()
}

/// Reads one HTTP/1.1 answer (headers and a `Content-Length` body); its status.
async fn read_answer(stream: &mut TcpStream) -> u16 {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed mid-answer: {buf:?}");
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf);
        if let Some(end) = text.find("\r\n\r\n") {
            let head = &text[..end];
            let length: usize = head
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().ok())?
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                return head[9..12].parse().unwrap();
            }
        }
    }
}

/// A connection the server has accepted (it answered a `GET /health` on it), with the head and
/// the first half of push `n` sent; answers the stream and the rest of the body.
async fn start_push(server: &Server, key: &str, user: &str, n: usize) -> (TcpStream, Vec<u8>) {
    let mut stream = TcpStream::connect(addr(server)).await.unwrap();
    stream
        .write_all(b"GET /health HTTP/1.1\r\nhost: test\r\n\r\n")
        .await
        .unwrap();
    assert_eq!(read_answer(&mut stream).await, 200);
    let body = push(n);
    let head = format!(
        "POST /v2/user/{user}/data HTTP/1.1\r\nhost: test\r\nx-service-api-key: {key}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let half = body.len() / 2;
    stream.write_all(&body[..half]).await.unwrap();
    (stream, body[half..].to_vec())
}

/// A server in `dir` with a grace period of `grace` seconds, its team's key and a user of the
/// team, `client_user_id`.
async fn started(
    dir: &std::path::Path,
    grace: &str,
    client_user_id: &str,
) -> (Server, String, String) {
    let key = create_team(dir, client_user_id, &[]);
    let server = Server::start(dir, &["--shutdown-grace-secs", grace]);
    let user = server
        .create_user(
            &http_client(30),
            Some(&key),
            json!({"client_user_id": client_user_id}),
        )
        .await;
    let user = user["user_id"].as_str().unwrap().to_owned();
    (server, key, user)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_answers_every_request_in_flight_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, key, user) = started(dir.path(), "30", "draining").await;

    let mut open = Vec::new();
    for n in 0..IN_FLIGHT {
        open.push(start_push(&server, &key, &user, n).await);
    }
    // Let the server read each head and hand the request to its handler.
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.signal_term();
    // No new connection once the signal is handled.
    let mut refused = false;
    for _ in 0..50 {
        if TcpStream::connect(addr(&server)).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        refused,
        "the server still accepts connections after SIGTERM"
    );

    // The requests in flight complete and are all answered.
    let mut answered = Vec::new();
    for (mut stream, rest) in open {
        stream.write_all(&rest).await.unwrap();
        answered.push(tokio::spawn(async move { read_answer(&mut stream).await }));
    }
    for (n, a) in answered.into_iter().enumerate() {
        assert_eq!(a.await.unwrap(), 200, "push {n}");
    }
    let exit = server
        .wait_exit(Duration::from_secs(30))
        .expect("the server did not exit after its requests were answered");
    assert!(exit.success(), "exit status {exit:?}");

    // Everything acknowledged is stored.
    let server = Server::start(dir.path(), &[]);
    let stored = http_client(30)
        .get(server.url(&format!(
            "/v2/timeseries/{user}/heartrate?start_date=2025-03-01&end_date=2025-03-02"
        )))
        .header("x-service-api-key", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(stored.status(), 200);
    let stored: Value = stored.json().await.unwrap();
    let samples = stored
        .as_array()
        .or_else(|| stored["data"].as_array())
        .unwrap_or_else(|| panic!("no samples in {stored}"));
    assert_eq!(samples.len(), IN_FLIGHT * SAMPLES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_never_completes_is_cut_at_the_grace_period() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, key, user) = started(dir.path(), "1", "stuck").await;
    // Half a body, and the rest never comes.
    let (_stream, _rest) = start_push(&server, &key, &user, 0).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.signal_term();
    let exit = server
        .wait_exit(Duration::from_secs(20))
        .expect("a stuck client held the server past its grace period");
    assert!(exit.success(), "exit status {exit:?}");
}
