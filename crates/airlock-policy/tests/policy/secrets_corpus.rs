//! Secret detection measured both ways on a labelled corpus (`tests/data/secrets/`): every
//! line of `positive.txt` holds secret material (fake values) and must be found and
//! redacted; no line of `negative.txt` (code and commands that only name secrets) may be
//! flagged. The rates are pinned (a failure message states both rates).

use airlock_policy::secrets::{redact, scan};
use serde_json::json;
use std::path::PathBuf;

fn lines(name: &str) -> Vec<String> {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/secrets")
        .join(name);
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with("# "))
        .map(str::to_string)
        .collect()
}

#[test]
fn secrets_are_found_and_names_of_secrets_are_not() {
    let positives = lines("positive.txt");
    let negatives = lines("negative.txt");
    assert!(positives.len() >= 100 && negatives.len() >= 100);
    let missed: Vec<&String> = positives
        .iter()
        .filter(|line| {
            let arguments = json!({ "command": line });
            scan(&arguments).is_empty() || redact(&arguments) == arguments
        })
        .collect();
    let flagged: Vec<(&String, Vec<String>)> = negatives
        .iter()
        .filter_map(|line| {
            let found = scan(&json!({ "command": line }));
            (!found.is_empty()).then(|| (line, found.into_iter().map(|f| f.kind).collect()))
        })
        .collect();
    let rate = |count: usize, total: usize| 100.0 * count as f64 / total as f64;
    let summary = format!(
        "secrets corpus: {} positives, false negatives {} ({:.1}%); {} negatives, false positives {} ({:.1}%)",
        positives.len(),
        missed.len(),
        rate(missed.len(), positives.len()),
        negatives.len(),
        flagged.len(),
        rate(flagged.len(), negatives.len())
    );
    assert!(
        missed.is_empty(),
        "missed secrets:\n{}",
        missed
            .iter()
            .map(|l| l.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        flagged.is_empty(),
        "{summary}\nflagged names of secrets:\n{}",
        flagged
            .iter()
            .map(|(l, k)| format!("{l}  {k:?}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
