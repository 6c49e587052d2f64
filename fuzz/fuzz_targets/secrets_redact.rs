//! The secret scanner and redactor on any text: never a panic, redaction is idempotent,
//! and nothing the scanner finds is left in a redacted value (G9).

#![no_main]

use airlock_policy::secrets::{redact, redact_text, scan};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|text: &str| {
    let arguments = json!({"body": text, "nested": {"url": text}, "list": [text]});
    let redacted = redact(&arguments);
    assert_eq!(redact(&redacted), redacted, "redaction is not idempotent");
    let left = scan(&redacted);
    assert!(
        left.is_empty(),
        "secrets left after redaction: {left:?} in {redacted}"
    );
    let once = redact_text(text);
    assert_eq!(redact_text(&once), once);
});
