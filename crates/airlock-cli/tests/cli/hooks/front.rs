//! The `airlock` front binary (`src/front.rs`): it runs `airlock hook …` on its own, and
//! hands every other command line to `airlock-full` unchanged.

use super::{consumed_grants, finish, fixture, spawn_with_input, start, verdict};
use crate::support::{stderr, stdout, BIN};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// `airlock-full`, which cargo builds beside `airlock`.
fn full() -> PathBuf {
    Path::new(BIN).with_file_name("airlock-full")
}

/// A copy of the front binary alone in a folder of its own, and a `PATH` holding nothing
/// else: no `airlock-full` anywhere it could look.
fn lone_front() -> (tempfile::TempDir, PathBuf) {
    let folder = tempfile::tempdir().unwrap();
    let front = folder.path().join("airlock");
    std::fs::copy(BIN, &front).unwrap();
    (folder, front)
}

#[test]
fn the_front_runs_the_hook_itself_without_the_whole_cli_beside_it() {
    let (_work, server, token) = start();
    let (folder, front) = lone_front();
    for agent in ["claude-code", "gemini"] {
        let mut hook = Command::new(&front);
        hook.args(["hook", agent, "--url", &server.url])
            .env("AIRLOCK_TOKEN", &token)
            .env("PATH", folder.path())
            .current_dir(folder.path());
        let (decision, reason) = verdict(
            agent,
            finish(spawn_with_input(hook, &fixture(agent, "allow"))),
        );
        assert_eq!(decision, "allow", "{agent}: {reason}");
    }
    // Both grants were redeemed before the agent heard "allow" (G1).
    assert_eq!(consumed_grants(&server), 2);
}

#[test]
fn the_front_says_what_is_missing_when_the_whole_cli_is_not_beside_it() {
    let (folder, front) = lone_front();
    let output = Command::new(&front)
        .args(["policy", "check", "policy.toml"])
        .env("PATH", folder.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(output.stdout.is_empty(), "{}", stdout(&output));
    let message = stderr(&output);
    assert!(
        message.starts_with("error: cannot run airlock-full:") && message.contains("beside it"),
        "{message}"
    );
}

/// `program ARGS…` with `argv[0] = "airlock"`, as a user's shell runs it.
fn run_as_airlock(program: &Path, args: &[&str], dir: &Path) -> Output {
    Command::new(program)
        .arg0("airlock")
        .args(args)
        .current_dir(dir)
        .env_remove("AIRLOCK_URL")
        .env_remove("AIRLOCK_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn every_other_command_line_reaches_the_whole_cli_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "version = 1\ndefault = \"maybe\"\n").unwrap();
    let good = dir.path().join("good.toml");
    std::fs::write(&good, "version = 1\ndefault = \"ask\"\n").unwrap();
    let (bad, good) = (bad.to_str().unwrap(), good.to_str().unwrap());
    let lines: [&[&str]; 8] = [
        &["--version"],
        &["--help"],
        &["no-such-command"],
        &["policy", "check", good],
        &["policy", "check", bad],
        &["policy", "check", "missing.toml"],
        &[
            "policy",
            "eval",
            good,
            "--tool",
            "shell.exec",
            "--args",
            "{\"command\":\"ls\"}",
        ],
        &[
            "approvals",
            "list",
            "--url",
            "http://127.0.0.1:1",
            "--token",
            "t",
        ],
    ];
    let mut codes = Vec::new();
    for args in lines {
        let through_front = run_as_airlock(Path::new(BIN), args, dir.path());
        let direct = run_as_airlock(&full(), args, dir.path());
        assert_eq!(
            through_front.status.code(),
            direct.status.code(),
            "{args:?}"
        );
        assert_eq!(stdout(&through_front), stdout(&direct), "{args:?}");
        assert_eq!(stderr(&through_front), stderr(&direct), "{args:?}");
        codes.push(direct.status.code());
    }
    // The lines above end every way a command can: 0, 1 and 2.
    assert_eq!(
        codes,
        [
            Some(0),
            Some(0),
            Some(2),
            Some(0),
            Some(1),
            Some(2),
            Some(0),
            Some(2)
        ]
    );
}

#[test]
fn a_hook_to_an_https_gateway_goes_to_the_whole_cli_and_fails_closed_without_it() {
    let input = fixture("claude-code", "allow");
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("https://127.0.0.1:{port}");
    let deny = |program: &Path, path: &Path| {
        let mut hook = Command::new(program);
        hook.args(["hook", "claude-code", "--url", &url, "--token", "alk_x"])
            .env("PATH", path);
        let (code, out, err) = finish(spawn_with_input(hook, &input));
        assert_eq!(code, Some(2), "{out} {err}");
        let (decision, reason) = verdict("claude-code", (Some(0), out, err));
        assert_eq!(decision, "deny");
        reason
    };
    // With the whole CLI beside it: its TLS client tried the gateway (which is down).
    let reason = deny(Path::new(BIN), Path::new("/nonexistent"));
    assert!(
        reason.contains(&format!("cannot reach airlock at {url}")),
        "{reason}"
    );
    // Alone: the hand-over failed, and the agent still reads a deny in its own form.
    let (folder, front) = lone_front();
    let reason = deny(&front, folder.path());
    assert!(reason.contains("cannot run airlock-full"), "{reason}");
}
