//! The standard-library Python example of docs/integrations/http.md, run as it is printed
//! against a real `airlock serve`: an allowed call executes, a denied one does not and
//! says why, an asked one waits for the person and executes only when approved. The
//! example cannot rot without this test failing.

use super::*;

/// `weather.*` runs, `shell.*` never, anything else asks.
const HTTP_POLICY: &str = r#"version = 1
default = "ask"
deadline = "1h"

[[rules]]
name = "weather-is-fine"
tool = "weather.get"
decision = "allow"

[[rules]]
name = "no-shell"
tool = "shell.run"
decision = "deny"
reason = "no shell from this agent"
"#;

/// The ```python block of the page, and a driver that gates the tool named on its
/// command line with a stand-in `execute` that says it ran.
fn example_script(folder: &std::path::Path) -> PathBuf {
    let page = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/integrations/http.md");
    let text = std::fs::read_to_string(&page).unwrap();
    let start = text.find("```python\n").expect("a python block in http.md") + "```python\n".len();
    let code = &text[start..];
    let code = &code[..code.find("```").unwrap()];
    assert!(
        code.lines().count() <= 25,
        "the example stays about 20 lines: {code}"
    );
    let driver = r#"
import sys
tool = sys.argv[1]
print(json.dumps(gated(tool, {"city": "Paris"}, lambda city: f"ran {tool} for {city}")))
"#;
    let script = folder.join("example.py");
    std::fs::write(&script, format!("{code}{driver}")).unwrap();
    script
}

fn run_example(server: &Server, token: &str, script: &std::path::Path, tool: &str) -> KillOnDrop {
    let mut command = Command::new("python3");
    command
        .arg(script)
        .arg(tool)
        .env("AIRLOCK_URL", &server.url)
        .env("AIRLOCK_TOKEN", token)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    KillOnDrop(command.spawn().unwrap())
}

/// What the example printed (its one JSON line).
fn printed(example: KillOnDrop) -> String {
    let (code, out, err) = finish(example);
    assert_eq!(code, Some(0), "{out}\n{err}");
    serde_json::from_str::<Value>(out.trim())
        .unwrap_or_else(|e| panic!("{e}: {out}"))
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn the_http_pages_python_example_runs_only_what_airlock_allows() {
    let work = tempfile::tempdir().unwrap();
    let policy = work.path().join("policy.toml");
    std::fs::write(&policy, HTTP_POLICY).unwrap();
    let server = Server::start(work.path(), &["--policy", policy.to_str().unwrap()]);
    let token = server.create_agent("framework");
    let script = example_script(work.path());

    let allowed = printed(run_example(&server, &token, &script, "weather.get"));
    assert_eq!(allowed, "ran weather.get for Paris");
    assert_eq!(consumed_grants(&server), 1, "redeemed before it ran");

    let denied = printed(run_example(&server, &token, &script, "shell.run"));
    assert!(
        denied.starts_with("Not executed (denied): ") && denied.contains("no shell"),
        "{denied}"
    );

    let before = server.pending();
    let asked = run_example(&server, &token, &script, "calendar.book");
    let approval = new_approval(&server, &before);
    let output = server.client(&["approvals", "approve", &approval]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(printed(asked), "ran calendar.book for Paris");
    assert_eq!(consumed_grants(&server), 2);

    let before = server.pending();
    let asked = run_example(&server, &token, &script, "calendar.book");
    let approval = new_approval(&server, &before);
    let output = server.client(&["approvals", "reject", &approval, "--reason", "not today"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let rejected = printed(asked);
    assert!(
        rejected.starts_with("Not executed (rejected): ") && rejected.contains("not today"),
        "{rejected}"
    );
    assert_eq!(consumed_grants(&server), 2);
}
