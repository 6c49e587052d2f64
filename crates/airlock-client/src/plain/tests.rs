#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::errors::{is_not_sent, is_transient, Refused};
use std::net::TcpListener;
use std::thread::JoinHandle;

/// A server on a free port that reads one request and sends `answer` (then closes);
/// the handle gives back the request as it arrived.
fn answering(answer: impl AsRef<[u8]> + Send + 'static) -> (String, JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let served = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let request = read_request(&mut stream);
        stream.write_all(answer.as_ref()).unwrap();
        request
    });
    (url, served)
}

/// An answer with `status` and a `Content-Length` body.
fn sized(status: &str, headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\n{headers}content-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// One request's head and its `Content-Length` body.
fn read_request(stream: &mut TcpStream) -> Vec<u8> {
    let mut request = Vec::new();
    let mut byte = [0u8; 1];
    while !request.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).unwrap();
        request.push(byte[0]);
    }
    let head = String::from_utf8(request.clone()).unwrap();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("Content-Length: "))
        .unwrap()
        .parse()
        .unwrap();
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).unwrap();
    request.extend_from_slice(&body);
    request
}

#[test]
fn a_request_leaves_whole_and_a_sized_answer_is_read() {
    let (url, served) = answering(sized(
        "200 OK",
        "content-type: application/json\r\nAirlock-Undecided: true\r\n",
        r#"{"a": true}"#,
    ));
    let client = Plain::new(&format!("{url}/prefix/"), Some("alk_t".into()));
    let answer = client
        .post(
            "/v1/hooks/gemini?wait_s=5",
            "{\"x\":1}",
            &[("Idempotency-Key", "k1".into())],
        )
        .unwrap();
    assert_eq!(answer.body, b"{\"a\": true}");
    assert!(answer.has_header("airlock-undecided"));
    assert!(!answer.has_header("airlock-outcome"));
    let request = String::from_utf8(served.join().unwrap()).unwrap();
    let authority = url.trim_start_matches("http://");
    for line in [
        "POST /prefix/v1/hooks/gemini?wait_s=5 HTTP/1.1\r\n".to_owned(),
        format!("Host: {authority}\r\n"),
        "Authorization: Bearer alk_t\r\n".into(),
        "Idempotency-Key: k1\r\n".into(),
        "Content-Type: application/json\r\n".into(),
        "Content-Length: 7\r\n".into(),
        "Connection: close\r\n".into(),
    ] {
        assert!(request.contains(&line), "{line:?} in {request}");
    }
    assert!(request.ends_with("\r\n\r\n{\"x\":1}"), "{request}");
}

#[test]
fn a_chunked_answer_is_put_back_together() {
    let (url, served) = answering(
        &b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\n{\"ok\r\n6;x=y\r\n\": 1}\n\r\n0\r\n\r\n"[..],
    );
    let answer = Plain::new(&url, None).post("/p", "{}", &[]).unwrap();
    assert_eq!(answer.body, b"{\"ok\": 1}\n");
    served.join().unwrap();
}

#[test]
fn error_statuses_become_the_errors_every_client_gives() {
    let (url, served) = answering(sized(
        "409 Conflict",
        "content-type: application/problem+json\r\n",
        r#"{"type":"stale_policy","title":"stale","status":409,"detail":"decided"}"#,
    ));
    let error = Plain::new(&url, Some("t".into()))
        .post("/p", "{}", &[])
        .unwrap_err();
    assert!(error.downcast_ref::<Refused>().is_some(), "{error:#}");
    assert_eq!(format!("{error:#}"), "stale: decided");
    served.join().unwrap();

    let (url, served) = answering(sized("503 Unavailable", "", "busy"));
    let error = Plain::new(&url, None).post("/p", "{}", &[]).unwrap_err();
    assert!(is_transient(&error) && !is_not_sent(&error), "{error:#}");
    assert_eq!(format!("{error:#}"), "the server answered 503: busy");
    served.join().unwrap();

    let (url, served) = answering(sized("401 Unauthorized", "", ""));
    let error = Plain::new(&url, None).post("/p", "{}", &[]).unwrap_err();
    assert!(!is_transient(&error), "{error:#}");
    assert!(
        format!("{error:#}").contains("no token was given"),
        "{error:#}"
    );
    served.join().unwrap();
}

#[test]
fn a_gateway_that_is_down_is_not_sent_and_a_lost_answer_is_transient() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let error = Plain::new(&format!("http://127.0.0.1:{port}"), None)
        .post("/p", "{}", &[])
        .unwrap_err();
    assert!(is_not_sent(&error), "{error:#}");
    assert!(
        format!("{error:#}").starts_with(&format!(
            "cannot reach airlock at http://127.0.0.1:{port}: "
        )),
        "{error:#}"
    );

    // The server took the request and closed without a word, or broke off its answer.
    for answer in [
        &b""[..],
        b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n{\"a\"",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\n{\"a\"",
        b"HTTP/1.1 200 OK\r\ncontent-le",
    ] {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let served = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            read_request(&mut stream);
            stream.write_all(answer).unwrap();
        });
        let error = Plain::new(&url, None).post("/p", "{}", &[]).unwrap_err();
        assert!(
            is_transient(&error) && !is_not_sent(&error),
            "{answer:?}: {error:#}"
        );
        served.join().unwrap();
    }
}

#[test]
fn a_header_value_with_a_line_break_is_never_sent() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let error = Plain::new(&url, None)
        .post(
            "/p",
            "{}",
            &[("Airlock-Project", "/tmp/a\r\nX-Evil: 1".into())],
        )
        .unwrap_err();
    assert!(is_not_sent(&error), "{error:#}");
    assert!(
        listener.accept().is_err(),
        "no connection was opened for a request that cannot be sent"
    );
}

#[test]
fn only_plain_http_urls_with_a_host_are_served() {
    assert!(serves("http://127.0.0.1:7070") && serves("HTTP://gw/airlock"));
    assert!(!serves("https://gw") && !serves("gw:7070") && !serves("http:/x"));
    assert_eq!(
        split("http://gw/airlock").unwrap(),
        ("gw:80".to_owned(), "/airlock".to_owned())
    );
    assert_eq!(
        split("http://[::1]:7070").unwrap(),
        ("[::1]:7070".to_owned(), String::new())
    );
    assert_eq!(split("http://[::1]").unwrap().0, "[::1]:80");
    for bad in ["http://", "http://user@gw", "http://gw?x=1", "https://gw"] {
        assert!(split(bad).is_err(), "{bad}");
    }
    let error = Plain::new("http://", None)
        .post("/p", "{}", &[])
        .unwrap_err();
    assert!(
        format!("{error:#}").contains("cannot use the airlock URL"),
        "{error:#}"
    );
}

#[test]
fn a_whole_answer_is_taken_without_waiting_for_the_close() {
    for answer in [
        sized("200 OK", "", "{}"),
        "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n".to_owned(),
    ] {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (done, closed) = std::sync::mpsc::channel::<()>();
        let served = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            read_request(&mut stream);
            stream.write_all(answer.as_bytes()).unwrap();
            // A server (or proxy) that keeps the connection open despite `close`.
            let _ = closed.recv_timeout(std::time::Duration::from_secs(20));
        });
        let started = std::time::Instant::now();
        let answer = Plain::new(&url, None).post("/p", "{}", &[]).unwrap();
        assert_eq!(answer.body, b"{}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "waited {:?} for a close",
            started.elapsed()
        );
        done.send(()).unwrap();
        served.join().unwrap();
    }
}

#[test]
fn a_password_in_the_url_is_never_in_an_error() {
    let error = Plain::new("http://admin:hunter2@127.0.0.1:1", None)
        .post("/p", "{}", &[])
        .unwrap_err();
    let text = format!("{error:#}");
    assert!(text.contains("http://127.0.0.1:1"), "{text}");
    assert!(
        !text.contains("hunter2") && !text.contains("admin"),
        "{text}"
    );
}
