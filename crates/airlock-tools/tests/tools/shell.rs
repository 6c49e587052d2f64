//! `shell.exec`: output, exit codes, the cleared environment, and a process group that is
//! killed whole.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{context, run};

/// Whether process `pid` is still running. A zombie (exited, not yet reaped by whoever
/// inherited it) is not running.
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Waits up to two seconds for `pid` to stop running (SIGKILL is asynchronous).
async fn gone(pid: u32) -> bool {
    for _ in 0..40 {
        if !running(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn output_and_exit_codes_are_captured() {
    let workspace = tempfile::tempdir().unwrap();
    let context = context(workspace.path());
    let output = run(
        "shell.exec",
        json!({"command": "echo out; echo err >&2; cat"}),
        &context,
    )
    .await;
    assert!(output.ok, "{output:?}");
    assert_eq!(
        output.output,
        json!({"exit_code": 0, "signal": null, "stdout": "out\n", "stderr": "err\n", "timed_out": false, "truncated": false})
    );

    let output = run(
        "shell.exec",
        json!({"command": "echo partial; exit 3"}),
        &context,
    )
    .await;
    assert!(!output.ok);
    assert_eq!(output.output["exit_code"], 3);
    assert_eq!(output.output["stdout"], "partial\n");
    assert_eq!(output.output["timed_out"], false);
}

#[tokio::test]
async fn it_runs_in_the_workspace_with_a_cleared_environment() {
    let workspace = tempfile::tempdir().unwrap();
    let canonical = workspace.path().canonicalize().unwrap();
    assert!(
        std::env::var_os("CARGO_MANIFEST_DIR").is_some(),
        "the test needs an environment to clear"
    );
    let output = run(
        "shell.exec",
        json!({"command": "pwd; echo \"$HOME\"; echo \"$LANG\"; env | cut -d= -f1 | sort | tr '\\n' ' '"}),
        &context(workspace.path()),
    )
    .await;
    assert!(output.ok, "{output:?}");
    let stdout = output.output["stdout"].as_str().unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], canonical.to_str().unwrap());
    assert_eq!(lines[1], canonical.to_str().unwrap());
    assert_eq!(lines[2], "C.UTF-8");
    let names: Vec<&str> = lines[3].split_whitespace().collect();
    // `sh` itself adds PWD (and, depending on the shell, SHLVL and OLDPWD).
    let extra: Vec<&&str> = names
        .iter()
        .filter(|name| !["HOME", "LANG", "PATH", "PWD", "SHLVL", "OLDPWD", "_"].contains(name))
        .collect();
    assert!(extra.is_empty(), "inherited variables: {extra:?}");
}

#[tokio::test]
async fn a_timeout_kills_the_command() {
    let workspace = tempfile::tempdir().unwrap();
    let mut context = context(workspace.path());
    context.limits.shell_timeout = Duration::from_millis(300);
    let started = Instant::now();
    let output = run(
        "shell.exec",
        json!({"command": "echo started; sleep 30"}),
        &context,
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert!(!output.ok);
    assert_eq!(output.output["timed_out"], true);
    assert_eq!(output.output["stdout"], "started\n");
    assert_eq!(output.output["exit_code"], json!(null));
    assert_eq!(output.output["signal"], 9);
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let workspace = tempfile::tempdir().unwrap();
    let mut context = context(workspace.path());
    context.limits.shell_timeout = Duration::from_millis(300);
    // The background `sleep` holds stdout open and would outlive the shell.
    let output = run(
        "shell.exec",
        json!({"command": "sleep 30 & echo $!; wait"}),
        &context,
    )
    .await;
    assert_eq!(output.output["timed_out"], true, "{output:?}");
    let pid: u32 = output.output["stdout"]
        .as_str()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        gone(pid).await,
        "the background sleep {pid} survived the timeout"
    );
}

#[tokio::test]
async fn leftovers_of_a_finished_command_are_killed_and_not_waited_for() {
    let workspace = tempfile::tempdir().unwrap();
    let context = context(workspace.path());
    let started = Instant::now();
    let output = run(
        "shell.exec",
        json!({"command": "sleep 30 & echo $!"}),
        &context,
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert!(output.ok, "{output:?}");
    let pid: u32 = output.output["stdout"]
        .as_str()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        gone(pid).await,
        "the background sleep {pid} outlived the command"
    );
}

#[tokio::test]
async fn output_is_capped_per_stream() {
    let workspace = tempfile::tempdir().unwrap();
    let mut context = context(workspace.path());
    context.limits.output_max_bytes = 1000;
    let output = run(
        "shell.exec",
        json!({"command": "head -c 200000 /dev/zero | tr '\\0' a; echo short >&2"}),
        &context,
    )
    .await;
    assert!(output.ok, "{output:?}");
    assert_eq!(output.output["stdout"].as_str().unwrap(), "a".repeat(1000));
    assert_eq!(output.output["stderr"], "short\n");
    assert_eq!(output.output["truncated"], true);
}

#[tokio::test]
async fn a_missing_workspace_is_an_error() {
    let workspace = tempfile::tempdir().unwrap();
    let missing = workspace.path().join("missing");
    let output = run("shell.exec", json!({"command": "true"}), &context(&missing)).await;
    assert_eq!(
        super::error_of(&output),
        format!(
            "the workspace directory {} is not usable",
            missing.display()
        )
    );
}
