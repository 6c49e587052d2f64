//! SMTP delivery of an `email.send` outbox effect to a real local SMTP sink: `aiosmtpd`
//! (PyPI, installed by scripts/test.sh), which prints every message it receives. A missing
//! sink fails the test; it is never skipped.

use std::process::Stdio;
use std::time::Duration;

use airlock_tools::{deliver_email, deliver_email_within, Builtins, Plan, SmtpConfig};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Starts `python3 -m aiosmtpd` on a free loopback port and waits until it accepts
/// connections.
async fn start_sink() -> (Child, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut sink = Command::new("python3")
        .args([
            "-u",
            "-m",
            "aiosmtpd",
            "-n",
            "-l",
            &format!("127.0.0.1:{port}"),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python3 is needed for the SMTP sink");
    for _ in 0..200 {
        if let Some(status) = sink.try_wait().unwrap() {
            let mut stderr = String::new();
            tokio::io::AsyncReadExt::read_to_string(sink.stderr.as_mut().unwrap(), &mut stderr)
                .await
                .unwrap();
            panic!(
                "the SMTP sink (python3 -m aiosmtpd) exited with {status}; install it with \
                 `pip install aiosmtpd` (scripts/test.sh does): {stderr}"
            );
        }
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return (sink, port);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the SMTP sink did not listen on port {port} within 10 s");
}

#[tokio::test]
async fn an_email_effect_is_delivered_to_the_smtp_server() {
    let (mut sink, port) = start_sink().await;
    let Plan::Outbox(effect) = Builtins::plan(
        "email.send",
        &json!({"to": "bob@example.com", "subject": "Q3 numbers", "body": "Revenue is up.\nAlice"}),
    )
    .unwrap() else {
        panic!("email.send is an outbox effect");
    };
    let config = SmtpConfig {
        host: "127.0.0.1".to_string(),
        port,
        from: "Airlock <airlock@example.com>".to_string(),
        username: None,
        password_env: None,
        starttls: false,
    };
    deliver_email(&config, &effect).await.unwrap();

    let mut lines = BufReader::new(sink.stdout.take().unwrap()).lines();
    let mut message = Vec::new();
    let reading = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("END MESSAGE") {
                return;
            }
            message.push(line);
        }
    };
    tokio::time::timeout(Duration::from_secs(10), reading)
        .await
        .expect("the sink printed no complete message within 10 s");
    let message = message.join("\n");
    for expected in [
        "Subject: Q3 numbers",
        "To: bob@example.com",
        "From: Airlock <airlock@example.com>",
        "Content-Type: text/plain; charset=utf-8",
        "\nRevenue is up.\nAlice",
    ] {
        assert!(
            message.contains(expected),
            "{expected:?} not in the message:\n{message}"
        );
    }
    sink.kill().await.unwrap();
}

#[tokio::test]
async fn starttls_is_required_when_configured_never_skipped() {
    // The sink speaks no STARTTLS: delivery must fail rather than fall back to plain text.
    let (mut sink, port) = start_sink().await;
    let Plan::Outbox(effect) = Builtins::plan(
        "email.send",
        &json!({"to": "bob@example.com", "subject": "s", "body": "b"}),
    )
    .unwrap() else {
        panic!("email.send is an outbox effect");
    };
    let config = SmtpConfig {
        host: "127.0.0.1".to_string(),
        port,
        from: "airlock@example.com".to_string(),
        username: None,
        password_env: None,
        starttls: true,
    };
    let error = deliver_email(&config, &effect)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("smtp delivery failed: "), "{error}");
    sink.kill().await.unwrap();
    let mut printed = String::new();
    tokio::io::AsyncReadExt::read_to_string(sink.stdout.as_mut().unwrap(), &mut printed)
        .await
        .unwrap();
    assert!(
        !printed.contains("MESSAGE FOLLOWS"),
        "a message was delivered:\n{printed}"
    );
}

#[tokio::test]
async fn a_refused_connection_is_a_delivery_error() {
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let Plan::Outbox(effect) = Builtins::plan(
        "email.send",
        &json!({"to": "bob@example.com", "subject": "s", "body": "b"}),
    )
    .unwrap() else {
        panic!("email.send is an outbox effect");
    };
    let config = SmtpConfig {
        host: "127.0.0.1".to_string(),
        port,
        from: "airlock@example.com".to_string(),
        username: None,
        password_env: None,
        starttls: false,
    };
    let error = deliver_email(&config, &effect)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with(&format!("smtp delivery failed: 127.0.0.1:{port}: ")),
        "{error}"
    );
}

#[tokio::test]
async fn a_server_that_never_answers_fails_the_delivery_within_its_deadline() {
    // Accepts every connection and never says a word (no greeting): lettre's own timeout
    // covers only the TCP connect, so this held a delivery forever.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = held.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            keep.lock().unwrap().push(socket);
        }
    });
    let Plan::Outbox(effect) = Builtins::plan(
        "email.send",
        &json!({"to": "bob@example.com", "subject": "s", "body": "b"}),
    )
    .unwrap() else {
        panic!("email.send is an outbox effect");
    };
    let config = SmtpConfig {
        host: "127.0.0.1".to_string(),
        port,
        from: "airlock@example.com".to_string(),
        username: None,
        password_env: None,
        starttls: false,
    };
    let started = std::time::Instant::now();
    let error = tokio::time::timeout(
        Duration::from_secs(20),
        deliver_email_within(&config, &effect, Duration::from_millis(300)),
    )
    .await
    .expect("the delivery was not given up at its deadline")
    .unwrap_err()
    .to_string();
    assert!(
        error.starts_with(&format!(
            "smtp delivery failed: 127.0.0.1:{port}: connecting: no answer within 0.3 s"
        )),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(held.lock().unwrap().len(), 1, "it did connect");
}
