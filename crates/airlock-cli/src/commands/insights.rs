//! `airlock insights`: the "fewer prompts" report. Per tool and target, how often people
//! were asked and what they decided; then the standing rules that would have removed the
//! most prompts, each with the `airlock rules add …` command that accepts it.
//!
//! Then what `GET /v1/insights` learned: narrow policy rules for commands people keep
//! approving (each with what it would change on the recorded calls), and tools approved
//! every time too fast to have been read.
//!
//! It only suggests: standing rules are minted by people (G6), so this command never
//! adds one itself; a person reads the suggestion and runs the command, or does not.

use crate::client::{parse, print_json, Client, ClientArgs};
use crate::table::{or_dash, Table};
use crate::Outcome;
use airlock_protocol::RuleScope;
use clap::Args;
use serde::Deserialize;

#[derive(Debug, Args)]
pub struct InsightsArgs {
    #[command(flatten)]
    client: ClientArgs,
}

/// Prompts of one tool and target.
#[derive(Debug, Deserialize)]
struct PromptCount {
    tool: String,
    #[serde(default)]
    target: Option<String>,
    asked: u64,
    approved: u64,
    rejected: u64,
    expired: u64,
    cancelled: u64,
    pending: u64,
}

/// A standing rule that would have allowed what people kept approving.
#[derive(Debug, Deserialize)]
struct Suggestion {
    tool: String,
    target: String,
    scope: RuleScope,
    scope_id: String,
    would_remove: u64,
    reason: String,
}

/// A policy rule learned from approvals.
#[derive(Debug, Deserialize)]
struct RuleSuggestion {
    tool: String,
    /// The pattern in words (a command prefix, classes in the project, a folder).
    pattern: String,
    approved: u64,
    rule: String,
    replay: airlock_protocol::ReplayReport,
}

/// A tool approved every time, too fast to have been read.
#[derive(Debug, Deserialize)]
struct RubberStamp {
    suggestion: String,
}

pub fn run(args: InsightsArgs) -> anyhow::Result<Outcome> {
    let client = Client::new(&args.client);
    let report = client.get("/v1/insights/prompts")?;
    let learned = client.get("/v1/insights")?;
    if args.client.json {
        // `GET /v1/insights/prompts` as it is, with what `GET /v1/insights` learned
        // beside it under `learned`.
        let mut both = report.clone();
        if let Some(object) = both.as_object_mut() {
            object.insert("learned".into(), learned);
        }
        print_json(&both)?;
        return Ok(Outcome::Ok);
    }
    prompts(&report)?;
    let rules: Vec<RuleSuggestion> = parse(&learned["rules"], "a list of rule suggestions")?;
    let stamps: Vec<RubberStamp> = parse(&learned["rubber_stamping"], "a list of flags")?;
    for stamp in &stamps {
        println!("\nrubber-stamping: {}", stamp.suggestion);
    }
    if !rules.is_empty() {
        println!(
            "\nsuggested policy rules (append one to your policy, then `airlock policy replay`):"
        );
    }
    for rule in &rules {
        println!(
            "\n  `{}` {} approved {} times; with this rule prompts per 100 calls go {:.2} → {:.2} ({} calls move to allow, no past deny or rejection among them):{}",
            rule.tool,
            rule.pattern,
            rule.approved,
            rule.replay.prompts_per_100_before,
            rule.replay.prompts_per_100_after,
            rule.replay.toward_allow,
            rule.rule.replace('\n', "\n    ")
        );
    }
    Ok(Outcome::Ok)
}

/// The "fewer prompts" part.
fn prompts(report: &serde_json::Value) -> anyhow::Result<()> {
    let items: Vec<PromptCount> = parse(&report["items"], "a list of prompt counts")?;
    let suggestions: Vec<Suggestion> = parse(&report["suggestions"], "a list of suggestions")?;
    let window = report["window"].as_u64().unwrap_or_default();
    if items.is_empty() {
        println!("nobody has been asked yet: no prompts to count");
        return Ok(());
    }
    println!("prompts, from the {window} most recent approvals:\n");
    let mut table = Table::new(&[
        "TOOL",
        "TARGET",
        "ASKED",
        "APPROVED",
        "REJECTED",
        "EXPIRED",
        "CANCELLED",
        "PENDING",
    ]);
    for item in &items {
        table.row(vec![
            item.tool.clone(),
            or_dash(item.target.as_deref()),
            item.asked.to_string(),
            item.approved.to_string(),
            item.rejected.to_string(),
            item.expired.to_string(),
            item.cancelled.to_string(),
            item.pending.to_string(),
        ]);
    }
    print!("{}", table.render());
    if suggestions.is_empty() {
        println!(
            "\nno standing rule to suggest: nothing was approved repeatedly without a rejection"
        );
        return Ok(());
    }
    println!("\nsuggested standing rules (nothing is added unless you run the command):");
    for suggestion in &suggestions {
        println!(
            "\n  {} for {} in {} {}: would have removed {} prompt{} ({})\n    {}",
            suggestion.tool,
            suggestion.target,
            suggestion.scope,
            suggestion.scope_id,
            suggestion.would_remove,
            if suggestion.would_remove == 1 {
                ""
            } else {
                "s"
            },
            suggestion.reason,
            accept_command(suggestion),
        );
    }
    Ok(())
}

/// The command that mints the suggested rule, quoted for `sh`. A target that starts with
/// `-` would read as an option, so then the positionals come last, after `--`.
fn accept_command(suggestion: &Suggestion) -> String {
    let (tool, target) = (shell_word(&suggestion.tool), shell_word(&suggestion.target));
    let options = format!(
        "--scope {} --scope-id {}",
        suggestion.scope,
        shell_word(&suggestion.scope_id)
    );
    if tool.starts_with('-') || target.starts_with('-') {
        format!("airlock rules add {options} -- {tool} {target}")
    } else {
        format!("airlock rules add {tool} {target} {options}")
    }
}

/// A word as `sh` reads it back: as is when plain, else single-quoted. Targets are text
/// an agent chose, so a suggestion must never paste as more than one word.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-:=@+,%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suggestion(target: &str) -> Suggestion {
        Suggestion {
            tool: "email.send".into(),
            target: target.into(),
            scope: RuleScope::Agent,
            scope_id: "agt_1".into(),
            would_remove: 2,
            reason: String::new(),
        }
    }

    #[test]
    fn the_command_to_accept_a_suggestion_pastes_as_typed() {
        assert_eq!(
            accept_command(&suggestion("bob@elsewhere.test")),
            "airlock rules add email.send bob@elsewhere.test --scope agent --scope-id agt_1"
        );
        assert_eq!(
            accept_command(&suggestion("-rf")),
            "airlock rules add --scope agent --scope-id agt_1 -- email.send -rf"
        );
    }

    #[test]
    fn targets_paste_as_one_word() {
        assert_eq!(shell_word("bob@elsewhere.test"), "bob@elsewhere.test");
        assert_eq!(shell_word("slack:T1/C1"), "slack:T1/C1");
        assert_eq!(shell_word("a b; rm -rf /"), "'a b; rm -rf /'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }
}
