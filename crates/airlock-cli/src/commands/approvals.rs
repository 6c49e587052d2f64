//! `airlock approvals list | show | approve | reject | ambiguous | reconcile`: the inbox
//! from a terminal. `list` also shows the ambiguous calls waiting for a person
//! (DESIGN.md §11.8; see `ambiguous.rs`); `approve --run` and `reject --run` decide a
//! whole run's approvals at once (`turn.rs`).
//!
//! A decision always echoes the approval's `binding_digest` as fetched just before, so
//! what is approved is exactly what was shown (G2): if the approval changed in between,
//! the server refuses and the command exits 1.
//!
//! `approve --latest` approves only when exactly one approval is pending: with several,
//! the newest may have arrived after the person ran `show --latest` and read another one,
//! and approving it would approve a call nobody saw. It then refuses (exit 1) and lists
//! the pending ones, to be approved by id. (`reject --latest` rejects the newest: a
//! rejection executes nothing.)

use super::{ambiguous, turn};
use crate::client::{encode, parse, print_json, Client, ClientArgs, Refused};
use crate::table::{fields, or_dash, relative, truncate, when, Table};
use crate::Outcome;
use airlock_policy::visible::{json_pretty_visible, show_hidden, show_hidden_in_block};
use airlock_protocol::{Approval, ApprovalStatus, DecisionVerdict, Resolution, RuleScope};
use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::{json, Value};

#[derive(Debug, Args)]
pub struct ApprovalsArgs {
    #[command(flatten)]
    client: ClientArgs,
    #[command(subcommand)]
    command: ApprovalsCommand,
}

#[derive(Debug, Subcommand)]
enum ApprovalsCommand {
    /// List approvals, newest first.
    List {
        /// pending, approved, rejected, expired, cancelled or all.
        #[arg(long, default_value = "pending", value_parser = parse_status)]
        status: StatusFilter,
        /// At most this many (1 to 1000).
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=1000))]
        limit: u32,
    },
    /// Show one approval in full: preview, arguments, rule, deadline, binding digest.
    Show {
        #[command(flatten)]
        which: Which,
    },
    /// Approve a pending approval (or every one of a run): its call may then execute, once.
    Approve {
        #[command(flatten)]
        which: Decided,
        /// Why (recorded in the audit log).
        #[arg(long)]
        reason: Option<String>,
        /// Also allow this tool for this target from now on: session, agent or task.
        #[arg(long, value_name = "SCOPE", conflicts_with = "run")]
        remember: Option<RuleScope>,
        /// How long the remembered rule lasts, such as `8h` or `7d` (default: until revoked).
        #[arg(long, value_name = "DURATION", requires = "remember")]
        expires_in: Option<String>,
        /// Approve with edits: the whole arguments object to run instead of the asked one
        /// (JSON). The policy judges the edit; the grant binds to exactly it.
        #[arg(long, value_name = "JSON", conflicts_with_all = ["args_file", "remember", "run"])]
        args: Option<String>,
        /// Approve with edits, the arguments read from a file (`-` for stdin).
        #[arg(long, value_name = "FILE", conflicts_with_all = ["remember", "run"])]
        args_file: Option<std::path::PathBuf>,
    },
    /// Reject a pending approval (or every one of a run): the call never executes and the
    /// agent is told why.
    Reject {
        #[command(flatten)]
        which: Decided,
        /// Why (shown to the agent and recorded in the audit log).
        #[arg(long)]
        reason: Option<String>,
    },
    /// List ambiguous calls: redeemed, and no outcome reported within `outcome_timeout`.
    Ambiguous,
    /// Say what became of an ambiguous call: `ran`, or `did_not_run` (the agent's next
    /// identical call is then asked afresh, under a new approval and a new grant).
    Reconcile {
        /// The call's id (`call_…`).
        call: String,
        /// ran or did_not_run.
        resolution: Resolution,
        /// Why (recorded in the audit log).
        #[arg(long)]
        reason: Option<String>,
    },
}

/// An approval id, or `--latest` for the newest pending one.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
struct Which {
    /// The approval's id (`apr_…`).
    id: Option<String>,
    /// The newest pending approval.
    #[arg(long)]
    latest: bool,
}

/// What `approve` and `reject` decide: one approval, or every pending one of a run.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
struct Decided {
    /// The approval's id (`apr_…`).
    id: Option<String>,
    /// The newest pending approval (approve: only when it is the only one pending).
    #[arg(long)]
    latest: bool,
    /// Every pending approval of this run (its turn's tool calls), decided at once; each
    /// stands alone, and the command exits 1 if any was refused.
    #[arg(long, value_name = "RUN_ID")]
    run: Option<String>,
}

impl Decided {
    /// The one approval named (when no run is).
    fn one(self) -> Which {
        Which {
            id: self.id,
            latest: self.latest,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct StatusFilter(Option<ApprovalStatus>);

fn parse_status(text: &str) -> Result<StatusFilter, String> {
    match text {
        "all" => Ok(StatusFilter(None)),
        other => other
            .parse()
            .map(|status| StatusFilter(Some(status)))
            .map_err(|_| {
                format!(
                    "`{other}` is not a status: pending, approved, rejected, expired, cancelled \
                 or all"
                )
            }),
    }
}

pub fn run(args: ApprovalsArgs) -> anyhow::Result<Outcome> {
    let client = Client::new(&args.client);
    let as_json = args.client.json;
    match args.command {
        ApprovalsCommand::List { status, limit } => list(&client, status, limit, as_json),
        ApprovalsCommand::Show { which } => {
            let (approval, value) = fetch(&client, &which)?;
            if as_json {
                print_json(&value)?;
            } else {
                print!("{}", describe(&approval));
            }
            Ok(Outcome::Ok)
        }
        // A whole run's approvals at once (`--run`).
        ApprovalsCommand::Approve {
            which: Decided { run: Some(run), .. },
            reason,
            ..
        } => turn::decide_run(&client, &run, DecisionVerdict::Approve, reason, as_json),
        ApprovalsCommand::Reject {
            which: Decided { run: Some(run), .. },
            reason,
        } => turn::decide_run(&client, &run, DecisionVerdict::Reject, reason, as_json),
        ApprovalsCommand::Approve {
            which,
            reason,
            remember,
            expires_in,
            args,
            args_file,
        } => {
            let which = which.one();
            let remember = remember.map(|scope| match &expires_in {
                Some(expires_in) => json!({"scope": scope, "expires_in": expires_in}),
                None => json!({"scope": scope}),
            });
            let edit = edited_arguments(args, args_file)?;
            let decision = Decision {
                verdict: "approve",
                reason,
                remember,
                edit,
            };
            decide(&client, &which, decision, as_json)
        }
        ApprovalsCommand::Reject { which, reason } => {
            let which = which.one();
            let decision = Decision {
                verdict: "reject",
                reason,
                remember: None,
                edit: None,
            };
            decide(&client, &which, decision, as_json)
        }
        ApprovalsCommand::Ambiguous => ambiguous::list(&client, as_json),
        ApprovalsCommand::Reconcile {
            call,
            resolution,
            reason,
        } => ambiguous::reconcile(&client, &call, resolution, reason, as_json),
    }
}

fn list(
    client: &Client,
    status: StatusFilter,
    limit: u32,
    as_json: bool,
) -> anyhow::Result<Outcome> {
    let mut path = format!("/v1/approvals?limit={limit}");
    if let Some(status) = status.0 {
        path.push_str(&format!("&status={status}"));
    }
    let value = client.get(&path)?;
    if as_json {
        print_json(&value)?;
        return Ok(Outcome::Ok);
    }
    let approvals: Vec<Approval> = parse(&value["items"], "a list of approvals")?;
    // Calls that may or may not have run wait for a person as much as pending ones do;
    // they are listed after the approvals.
    let ambiguous = match status.0 {
        Some(ApprovalStatus::Pending) => ambiguous::table(client)?,
        _ => None,
    };
    let ambiguous = ambiguous
        .map(|table| format!("\nambiguous calls (redeemed, no outcome reported):\n{table}"))
        .unwrap_or_default();
    if approvals.is_empty() {
        match status.0 {
            Some(status) => println!("no {status} approvals"),
            None => println!("no approvals"),
        }
        print!("{ambiguous}");
        return Ok(Outcome::Ok);
    }
    let mut table = Table::new(&["ID", "STATUS", "TOOL", "RISK", "SUMMARY", "WHEN"]);
    for approval in approvals.iter().take(limit as usize) {
        let deadline = match approval.status {
            ApprovalStatus::Pending => format!("due {}", relative(approval.deadline)),
            _ => approval
                .decided_at
                .map_or_else(|| "-".to_owned(), |at| format!("decided {}", relative(at))),
        };
        table.row(vec![
            approval.id.clone(),
            approval.status.to_string(),
            approval.tool.clone(),
            approval.risk.to_string(),
            truncate(&approval.preview.summary, 60),
            deadline,
        ]);
    }
    print!("{}{ambiguous}", table.render());
    Ok(Outcome::Ok)
}

/// The approval named by id, or the newest pending one; with the raw JSON for `--json`.
fn fetch(client: &Client, which: &Which) -> anyhow::Result<(Approval, Value)> {
    let value = match &which.id {
        Some(id) => client.get(&format!("/v1/approvals/{}", encode(id)))?,
        None => {
            let page = client.get("/v1/approvals?status=pending&limit=1")?;
            match page["items"].as_array().and_then(|items| items.first()) {
                Some(newest) => newest.clone(),
                None => return Err(Refused("there is no pending approval".into()).into()),
            }
        }
    };
    Ok((parse(&value, "an approval")?, value))
}

/// Refuses when more than one approval is pending: `approve --latest` would approve the
/// newest, which may not be the one the person read (`show --latest` a moment before).
fn only_pending(client: &Client) -> anyhow::Result<()> {
    let page = client.get("/v1/approvals?status=pending&limit=10")?;
    let pending: Vec<Approval> = parse(&page["items"], "a list of approvals")?;
    if pending.len() < 2 {
        return Ok(());
    }
    let listed: Vec<String> = pending
        .iter()
        .map(|approval| {
            format!(
                "  {}  {}",
                approval.id,
                truncate(&show_hidden(&approval.preview.summary), 60)
            )
        })
        .collect();
    let more = if pending.len() == 10 { "\n  …" } else { "" };
    Err(Refused(format!(
        "more than one approval is pending, so --latest could approve one you have not \
         seen; approve it by id (airlock approvals show ID, then airlock approvals approve \
         ID):\n{}{more}",
        listed.join("\n")
    ))
    .into())
}

/// What one `approve` or `reject` sends.
struct Decision {
    verdict: &'static str,
    reason: Option<String>,
    remember: Option<Value>,
    /// Approve with edits: the arguments to run instead.
    edit: Option<Value>,
}

/// The edited arguments of `--args` or `--args-file`, which must be a JSON object: a
/// mistake is a usage error (exit 2) before anything is sent.
fn edited_arguments(
    args: Option<String>,
    args_file: Option<std::path::PathBuf>,
) -> anyhow::Result<Option<Value>> {
    let (text, from) = match (args, args_file) {
        (Some(text), _) => (text, "--args".to_owned()),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .context("reading --args-file from stdin")?;
            (text, "--args-file -".to_owned())
        }
        (None, Some(path)) => (
            std::fs::read_to_string(&path)
                .with_context(|| format!("reading --args-file {}", path.display()))?,
            format!("--args-file {}", path.display()),
        ),
        (None, None) => return Ok(None),
    };
    let value: Value =
        serde_json::from_str(&text).with_context(|| format!("{from} is not JSON"))?;
    if !value.is_object() {
        anyhow::bail!("{from} must be a JSON object (the whole arguments of the call)");
    }
    Ok(Some(value))
}

fn decide(
    client: &Client,
    which: &Which,
    decision: Decision,
    as_json: bool,
) -> anyhow::Result<Outcome> {
    let Decision {
        verdict,
        reason,
        remember,
        edit,
    } = decision;
    if verdict == "approve" && which.latest {
        only_pending(client)?;
    }
    let (approval, _) = fetch(client, which)?;
    // A decision is about the call as it stands now: the edited one once a person edited it.
    let digest = approval
        .edited_binding_digest
        .as_deref()
        .unwrap_or(&approval.binding_digest);
    let mut body = json!({"decision": verdict, "binding_digest": digest});
    if let Some(reason) = reason {
        body["reason"] = reason.into();
    }
    if let Some(remember) = &remember {
        body["remember"] = remember.clone();
    }
    let edited = edit.is_some();
    if let Some(edit) = edit {
        body["arguments"] = edit;
    }
    let answer = client.post(
        &format!("/v1/approvals/{}/decision", encode(&approval.id)),
        &body,
    )?;
    if as_json {
        print_json(&answer)?;
        return Ok(Outcome::Ok);
    }
    let done = if verdict == "approve" {
        "approved"
    } else {
        "rejected"
    };
    println!("{done} {}: {}", approval.id, approval.preview.summary);
    if edited {
        let decided: Approval = parse(&answer, "an approval")?;
        match decided.edited_binding_digest {
            Some(digest) => println!("with edited arguments (binding digest {digest})"),
            None => println!("the arguments given were the asked ones: nothing was edited"),
        }
    }
    if let Some(remember) = &remember {
        let lasting = match remember["expires_in"].as_str() {
            Some(expires_in) => format!("for {expires_in}"),
            None => "until revoked".to_owned(),
        };
        println!(
            "remembered: {} for {} is allowed without asking in this {} ({lasting})",
            show_hidden(&approval.tool),
            show_hidden(approval.standing_target.as_deref().unwrap_or("-")),
            remember["scope"].as_str().unwrap_or("-"),
        );
    }
    Ok(Outcome::Ok)
}

/// The full human view of one approval.
fn describe(approval: &Approval) -> String {
    let mut out = fields(&[
        ("approval", approval.id.clone()),
        ("status", approval.status.to_string()),
        ("summary", show_hidden(&approval.preview.summary)),
        (
            "tool",
            format!("{} (risk {})", show_hidden(&approval.tool), approval.risk),
        ),
        ("agent", approval.agent_id.clone()),
        ("session", or_dash(approval.session_id.as_deref())),
        ("call", approval.call_id.clone()),
        ("rule", or_dash(approval.rule.as_deref())),
        ("reason", approval.reason.clone().unwrap_or_default()),
        ("created", when(approval.created_at)),
        ("deadline", when(approval.deadline)),
        ("decided", approval.decided_at.map(when).unwrap_or_default()),
        (
            "decided by",
            approval.decided_by.clone().unwrap_or_default(),
        ),
        (
            "decision reason",
            approval.decision_reason.clone().unwrap_or_default(),
        ),
        // What a standing rule would bind to, exactly: nothing in it may hide (G2).
        (
            "remember target",
            show_hidden(approval.standing_target.as_deref().unwrap_or_default()),
        ),
        ("binding digest", approval.binding_digest.clone()),
        ("policy digest", approval.policy_digest.clone()),
    ]);
    if let Some(body) = &approval.preview.body {
        out.push_str("\nbody:\n");
        for line in show_hidden_in_block(body).lines() {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str("\narguments:\n");
    let arguments = json_pretty_visible(&approval.preview.arguments);
    for line in arguments.lines() {
        out.push_str("  ");
        out.push_str(line);
        out.push('\n');
    }
    out
}
