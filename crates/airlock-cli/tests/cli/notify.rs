//! `airlock serve --config FILE` and `DIR/airlock.toml`: a file that cannot work stops
//! the server before it serves (exit 2, naming the problem); a good one makes the server
//! notify a webhook of each new approval.

use super::support::{command, stderr, Server};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

fn serve_with(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    command(dir)
        .arg("serve")
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(["--listen", "127.0.0.1:0"])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn serve_refuses_a_config_it_cannot_use_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, "[notifications]\npublic_urll = \"https://x\"\n").unwrap();
    let output = serve_with(dir.path(), &["--config", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("public_urll") && message.contains("bad.toml"),
        "{message}"
    );

    // A webhook whose key variable is not set is refused too, before serving.
    std::fs::write(
        &file,
        "[[notifications.webhooks]]\nurl = \"http://127.0.0.1:9/x\"\nsecret_env = \"AIRLOCK_TEST_UNSET_KEY\"\n",
    )
    .unwrap();
    let output = serve_with(dir.path(), &["--config", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("AIRLOCK_TEST_UNSET_KEY is not set"));

    // Without --config, DIR/airlock.toml is read when it exists.
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/airlock.toml"), "[notifs]\n").unwrap();
    let output = serve_with(dir.path(), &[]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("notifs"), "{}", stderr(&output));
}

/// A one-thread HTTP receiver: answers 200 to every request and hands over each request
/// (head, body).
fn receiver() -> (String, mpsc::Receiver<(String, Vec<u8>)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (sender, received) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            let length = head
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            if sender.send((head, body)).is_err() {
                return;
            }
        }
    });
    (url, received)
}

#[test]
fn serve_notifies_the_webhooks_of_its_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let (url, received) = receiver();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::write(
        dir.path().join("data/airlock.toml"),
        format!(
            "[notifications]\npublic_url = \"https://airlock.example\"\n\
             [[notifications.webhooks]]\nurl = \"{url}\"\nsecret_env = \"HOOK_KEY\"\nuser = \"owner\"\n"
        ),
    )
    .unwrap();
    let server = Server::start_with_env(dir.path(), &[], &[("HOOK_KEY", "k3y")]);
    let agent = server.create_agent("scout");
    let call: Value = ureq::post(format!("{}/v1/calls", server.url))
        .header("Authorization", format!("Bearer {agent}"))
        .send_json(serde_json::json!({"tool": "email.send", "arguments": {"to": "bob@acme.test"}}))
        .unwrap()
        .body_mut()
        .read_json()
        .unwrap();
    assert_eq!(call["status"], "pending", "{call}");

    let (head, body) = received
        .recv_timeout(Duration::from_secs(10))
        .expect("the webhook was not called");
    let head = head.to_ascii_lowercase();
    assert!(head.contains("x-airlock-signature: sha256="), "{head}");
    assert!(head.contains("x-airlock-timestamp: "), "{head}");
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["event"], "approval.requested");
    assert_eq!(body["approval"]["id"], call["approval_id"]);
    assert_eq!(body["approval"]["agent"], "scout");
    // Links are built on public_url. A webhook's never signs anyone in, whatever its
    // `user` (which the log says is ignored): it opens the page, which asks for a sign-in.
    assert_eq!(
        body["link"],
        format!(
            "https://airlock.example/approvals/{}",
            call["approval_id"].as_str().unwrap()
        )
    );
    super::support::eventually(Duration::from_secs(10), "the warning", || {
        server.stderr.text().contains("`user` is ignored")
    });
}

#[test]
fn serve_refuses_smtp_credentials_without_tls_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("airlock.toml");
    std::fs::write(
        &file,
        "[notifications.email]\nto = [\"alice@acme.test\"]\n[notifications.email.smtp]\n\
         host = \"127.0.0.1\"\nport = 2525\nusername = \"airlock\"\npassword_env = \"SMTP_PW\"\n",
    )
    .unwrap();
    // A server that starts anyway is stopped after a while, and the test fails.
    let mut child = command(dir.path())
        .env("SMTP_PW", "hunter2")
        .arg("serve")
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--config",
            file.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = super::support::wait_exit(&mut child, Duration::from_secs(30));
    let (_, err) = super::support::finished_output(&mut child);
    let output = std::process::Output {
        status,
        stdout: Vec::new(),
        stderr: err.into_bytes(),
    };
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("without TLS"), "{message}");
    assert!(!message.contains("hunter2"), "{message}");
}

#[test]
fn serve_warns_when_links_would_point_to_an_unspecified_address() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::write(
        dir.path().join("data/airlock.toml"),
        "[[notifications.webhooks]]\nurl = \"http://127.0.0.1:9/hook\"\nsecret_env = \"HOOK_KEY\"\n",
    )
    .unwrap();
    let mut child = command(dir.path())
        .env("HOOK_KEY", "k3y")
        .env("RUST_LOG", "info")
        .arg("serve")
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(["--listen", "0.0.0.0:0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (out, err) = (
        super::support::Captured::default(),
        super::support::Captured::default(),
    );
    out.collect(child.stdout.take().unwrap());
    err.collect(child.stderr.take().unwrap());
    let child = super::support::KillOnDrop(child);
    super::support::eventually(Duration::from_secs(30), "the public_url warning", || {
        err.text().contains("public_url is not set") || out.text().contains("public_url is not set")
    });
    drop(child);
}
