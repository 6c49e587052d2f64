//! `airlock approvals approve --run RUN_ID` (and `reject --run`): every pending approval
//! of one run decided at once, through `POST /v1/approvals/decisions` (DESIGN.md §11.6).
//!
//! Each approval is decided with the binding digest it had when it was listed, so what is
//! decided is exactly what was shown (G2), and each stands alone: one refused (decided by
//! someone else meanwhile, say) changes nothing for the others. The command exits 1 when
//! any of them was refused, 0 when all were decided.

use crate::client::{encode, parse, print_json, Client, Refused};
use crate::table::{truncate, Table};
use crate::Outcome;
use airlock_protocol::{Approval, BatchItem, BatchResults, DecisionBatch, DecisionVerdict};
use serde_json::Value;

/// Decides every pending approval of `run` with `verdict`.
pub fn decide_run(
    client: &Client,
    run: &str,
    verdict: DecisionVerdict,
    reason: Option<String>,
    as_json: bool,
) -> anyhow::Result<Outcome> {
    let page = client.get(&format!(
        "/v1/approvals?status=pending&limit=1000&run_id={}",
        encode(run)
    ))?;
    let approvals: Vec<Approval> = parse(&page["items"], "a list of approvals")?;
    if approvals.is_empty() {
        return Err(Refused(format!("run {run} has no pending approval")).into());
    }
    let items = approvals
        .iter()
        .map(|approval| BatchItem {
            id: approval.id.clone(),
            binding_digest: approval
                .edited_binding_digest
                .clone()
                .unwrap_or_else(|| approval.binding_digest.clone()),
            decision: verdict,
            reason: reason.clone(),
            arguments: None,
        })
        .collect();
    let answer: Value = client.post("/v1/approvals/decisions", &DecisionBatch { items })?;
    let results: BatchResults = parse(&answer, "the results of a batch of decisions")?;
    let refused = results
        .results
        .iter()
        .any(|result| result.problem.is_some());
    if as_json {
        print_json(&answer)?;
    } else {
        let mut table = Table::new(&["ID", "OUTCOME", "SUMMARY"]);
        for result in &results.results {
            let outcome = match (&result.status, &result.problem) {
                (Some(status), _) => status.to_string(),
                (None, Some(problem)) => format!("refused: {}", problem.kind),
                (None, None) => "-".to_owned(),
            };
            let summary = approvals
                .iter()
                .find(|approval| approval.id == result.id)
                .map(|approval| truncate(&approval.preview.summary, 60))
                .unwrap_or_default();
            table.row(vec![result.id.clone(), outcome, summary]);
        }
        print!("{}", table.render());
        for result in &results.results {
            if let Some(problem) = &result.problem {
                println!("{}: {}", result.id, problem.detail);
            }
        }
    }
    Ok(if refused {
        Outcome::Refused
    } else {
        Outcome::Ok
    })
}
