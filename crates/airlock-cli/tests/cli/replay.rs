//! `airlock policy replay | explain | lint` as a user runs them: on a calls file, on an
//! audit export of a real server (and that export tampered with), and against the server
//! itself (`--since`); exit codes 0, 1 and 2.

use crate::support::{command, stderr, stdout, Server};
use serde_json::Value;
use std::path::Path;

/// Mail is asked, reads allowed, destructive shell denied.
const POLICY: &str = r#"version = 1
default = "ask"

[tools."email.send"]
risk = "external"
target = "to"

[tools."fs.read"]
risk = "read"

[[rules]]
name = "reads-are-fine"
tool = "fs.read"
decision = "allow"

[[rules]]
name = "no-destructive-shell"
tool = "shell.exec"
decision = "deny"
when = { command = { prefix = ["rm -rf"] } }
"#;

/// The same with mail inside acme allowed: a loosening.
fn looser() -> String {
    format!("{POLICY}\n[[rules]]\nname = \"mail-internal\"\ntool = \"email.send\"\ndecision = \"allow\"\nwhen = {{ to = {{ glob = \"*@acme.test\" }} }}\n")
}

const CALLS: &str = r#"{"tool":"email.send","arguments":{"to":"ana@acme.test"},"decision":"ask"}
{"tool":"email.send","arguments":{"to":"eve@evil.test"}}
{"agent":"claude-code","payload":{"tool_name":"Bash","tool_input":{"command":"rm -rf /"},"cwd":"/p"}}
{"tool":"fs.read","arguments":{"path":"/p/a"}}
"#;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn run(dir: &Path, args: &[&str]) -> std::process::Output {
    command(dir).args(args).output().unwrap()
}

#[test]
fn replay_of_a_calls_file_reports_and_exits_1_on_loosening() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let calls = write(dir, "calls.jsonl", CALLS);
    let baseline = write(dir, "policy.toml", POLICY);
    let candidate = write(dir, "candidate.toml", &looser());
    let base = ["policy", "replay"];

    // The same policy: nothing changes, exit 0.
    let same = run(
        dir,
        &[
            &base[..],
            &[
                &baseline,
                "--calls",
                &calls,
                "--baseline",
                &baseline,
                "--json",
            ],
        ]
        .concat(),
    );
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
    let report: Value = serde_json::from_str(&stdout(&same)).unwrap();
    assert_eq!(report["calls"], 4, "{report}");
    assert_eq!(report["changed"], 0, "{report}");

    // Loosening: exit 1 naming the count, the changed call listed with its rule.
    let loose = run(
        dir,
        &[
            &base[..],
            &[&candidate, "--calls", &calls, "--baseline", &baseline],
        ]
        .concat(),
    );
    assert_eq!(loose.status.code(), Some(1), "{}", stderr(&loose));
    let text = stdout(&loose);
    assert!(text.contains("ask → allow"), "{text}");
    assert!(
        text.contains("line 1  email.send  ask → allow  by mail-internal"),
        "{text}"
    );
    assert!(
        text.contains("prompts per 100 calls: 50.00 before, 25.00 after"),
        "{text}"
    );
    assert!(
        stderr(&loose).contains("1 call would move toward allow"),
        "{}",
        stderr(&loose)
    );

    // --allow-loosening accepts it: exit 0, same report; and it is deterministic.
    let json_args = [
        &base[..],
        &[
            &candidate,
            "--calls",
            &calls,
            "--baseline",
            &baseline,
            "--json",
            "--allow-loosening",
        ],
    ]
    .concat();
    let accepted = run(dir, &json_args);
    assert_eq!(accepted.status.code(), Some(0), "{}", stderr(&accepted));
    assert_eq!(stdout(&accepted), stdout(&run(dir, &json_args)));
    let report: Value = serde_json::from_str(&stdout(&accepted)).unwrap();
    assert_eq!(report["toward_allow"], 1);
    assert_eq!(report["changes"][0]["id"], "line 1");
    assert_eq!(report["changes"][0]["rule_after"], "mail-internal");

    // A malformed line is named; exit 2, no report.
    let bad = write(dir, "bad.jsonl", &format!("{CALLS}{{\"tool\": \n"));
    let output = run(dir, &[&base[..], &[&candidate, "--calls", &bad]].concat());
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("line 5"), "{}", stderr(&output));
    assert!(stdout(&output).is_empty());

    // A candidate that does not load: its errors with positions, no report, exit 1.
    let broken = write(dir, "broken.toml", "version = 1\ndefault = \"maybe\"\n");
    let output = run(dir, &[&base[..], &[&broken, "--calls", &calls]].concat());
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("broken.toml:2:"),
        "{}",
        stderr(&output)
    );
    assert!(stdout(&output).is_empty(), "{}", stdout(&output));
}

#[test]
fn explain_and_lint_on_files() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let policy = write(dir, "policy.toml", &looser());
    let output = run(
        dir,
        &[
            "policy",
            "explain",
            &policy,
            "--tool",
            "email.send",
            "--args",
            r#"{"to":"eve@evil.test"}"#,
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains(
            "mail-internal (email.send allow): missed: when.to does not hold for \"eve@evil.test\""
        ),
        "{text}"
    );
    assert!(
        text.contains("rules decide: ask (no rule matched"),
        "{text}"
    );
    assert!(
        text.contains("standing rules: none of the 0 live standing rules"),
        "{text}"
    );
    assert!(text.contains("verdict: ask"), "{text}");

    let shadowed = format!("{POLICY}\n[[rules]]\nname = \"some-shell\"\ntool = \"shell.exec\"\ndecision = \"allow\"\nwhen = {{ command = {{ prefix = [\"rm -rf\"] }} }}\nexamples = {{ match = [{{ command = \"rm -rf x\" }}] }}\n");
    let lint_file = write(dir, "lint.toml", &shadowed);
    let output = run(dir, &["policy", "lint", &lint_file]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("rule `some-shell` is shadowed by the stricter rule `no-destructive-shell`"),
        "{text}"
    );
    assert!(
        text.contains("rule `some-shell` has examples on one side only"),
        "{text}"
    );

    // With a history: the rules no call matched, and only those.
    let calls = write(dir, "calls.jsonl", CALLS);
    let unused = write(
        dir,
        "unused.toml",
        &format!(
            "{}\n[[rules]]\nname = \"no-fetch\"\ntool = \"http.fetch\"\ndecision = \"deny\"\n",
            looser()
        ),
    );
    let output = run(
        dir,
        &["policy", "lint", &unused, "--calls", &calls, "--json"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let findings: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        findings["findings"],
        serde_json::json!([{"kind": "never_matched", "rule": "no-fetch", "calls": 4}]),
        "{findings}"
    );
    let output = run(dir, &["policy", "lint", &policy, "--calls", &calls]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(
        stdout(&output).contains("no findings"),
        "{}",
        stdout(&output)
    );
    let clean = write(dir, "clean.toml", POLICY);
    let output = run(dir, &["policy", "lint", &clean]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
}

#[test]
fn replay_of_a_servers_history_and_of_its_export_tampered_or_not() {
    let work = tempfile::tempdir().unwrap();
    let policy = write(work.path(), "policy.toml", POLICY);
    let server = Server::start(work.path(), &["--policy", &policy]);
    let agent = server.create_agent("scout");
    for (tool, args) in [
        ("email.send", r#"{"to":"ana@acme.test"}"#),
        ("fs.read", r#"{"path":"/p/a"}"#),
        ("shell.exec", r#"{"command":"rm -rf /"}"#),
    ] {
        let output = server.client_as(&agent, &["call", tool, "--args", args]);
        assert!(output.status.code().is_some(), "{}", stderr(&output));
    }
    let candidate = write(work.path(), "candidate.toml", &looser());
    let version = server.get_json("/v1/policy")["version"].clone();

    // --since: the server's own dry run.
    let output = server.client(&[
        "policy",
        "replay",
        &candidate,
        "--since",
        "1h",
        "--json",
        "--allow-loosening",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["calls"], 3, "{report}");
    assert_eq!(report["toward_allow"], 1, "{report}");
    let output = server.client(&["policy", "replay", &candidate]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(
        server.get_json("/v1/policy")["version"],
        version,
        "a replay saves nothing"
    );

    // The export replays alike, offline.
    let export = work.path().join("audit.ndjson");
    let output = server.client(&["audit", "export", "--out", export.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let dir = work.path();
    let output = run(
        dir,
        &[
            "policy",
            "replay",
            &candidate,
            "--from",
            export.to_str().unwrap(),
            "--json",
            "--allow-loosening",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let offline: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(offline, report, "the export and the server replay alike");

    // Tampered: refused, naming where the chain breaks; --no-verify replays it anyway.
    let text = std::fs::read_to_string(&export).unwrap();
    let tampered_text = text.replacen("ana@acme.test", "ann@acme.test", 1);
    assert_ne!(text, tampered_text);
    let tampered = write(dir, "tampered.ndjson", &tampered_text);
    let output = run(
        dir,
        &[
            "policy",
            "replay",
            &candidate,
            "--from",
            &tampered,
            "--allow-loosening",
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("the audit chain breaks at seq"),
        "{}",
        stderr(&output)
    );
    assert!(stdout(&output).is_empty());
    let output = run(
        dir,
        &[
            "policy",
            "replay",
            &candidate,
            "--from",
            &tampered,
            "--no-verify",
            "--allow-loosening",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    // Lint over the server's history: the mail rule matched, nothing else to say about it.
    let output = server.client(&["policy", "lint", &candidate, "--since", "1h", "--json"]);
    let findings: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(findings["findings"], serde_json::json!([]), "{findings}");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}
