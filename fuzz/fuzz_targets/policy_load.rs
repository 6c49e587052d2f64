//! The policy parser and loader on any text: never a panic; a policy that loads evaluates
//! every call to a verdict (evaluation never errors) and has a stable digest.

#![no_main]

use airlock_policy::{Call, LoadOptions, Policy};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|text: &str| {
    let Ok(policy) = Policy::load(text, &LoadOptions::default()) else {
        return;
    };
    let again = Policy::load(text, &LoadOptions::default());
    assert_eq!(
        again.map(|p| p.digest().to_owned()).ok().as_deref(),
        Some(policy.digest())
    );
    let calls = [
        ("email.send", json!({"to": "bob@acme.test", "body": "hi"})),
        ("shell.exec", json!({"command": "rm -rf / && ls $(whoami)"})),
        ("fs.read", json!({"path": "../../etc/passwd"})),
        ("http.get", json!({"url": "https://x.acme.test:8/a?b=c"})),
        ("mcp__srv__tool", json!({"a": {"b": [1, null, "x"]}})),
    ];
    for (tool, arguments) in &calls {
        let _ = policy.evaluate(&Call::new(tool, arguments));
    }
});
