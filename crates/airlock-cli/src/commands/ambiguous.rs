//! `airlock approvals ambiguous | reconcile`: calls that were approved and redeemed but
//! whose outcome nobody reported within the policy's `outcome_timeout` (DESIGN.md §11.8),
//! and a person's account of each: `ran` or `did_not_run`.

use crate::client::{encode, parse, print_json, Client};
use crate::table::{fields, or_dash, relative, Table};
use crate::Outcome;
use airlock_protocol::{Call, ReconcileRequest, Resolution};

/// The ambiguous calls as a table, or `None` when there are none.
pub fn table(client: &Client) -> anyhow::Result<Option<String>> {
    let calls: Vec<Call> = parse(&client.get("/v1/calls/ambiguous")?, "a list of calls")?;
    if calls.is_empty() {
        return Ok(None);
    }
    let mut table = Table::new(&["CALL", "TOOL", "AGENT", "REDEEMED", "RECONCILE WITH"]);
    for call in &calls {
        table.row(vec![
            call.id.clone(),
            call.tool.clone(),
            call.agent_id.clone(),
            call.redeemed_at.map_or_else(|| "-".to_owned(), relative),
            format!("airlock approvals reconcile {} ran|did_not_run", call.id),
        ]);
    }
    Ok(Some(table.render()))
}

/// `airlock approvals ambiguous`.
pub fn list(client: &Client, as_json: bool) -> anyhow::Result<Outcome> {
    if as_json {
        print_json(&client.get("/v1/calls/ambiguous")?)?;
        return Ok(Outcome::Ok);
    }
    match table(client)? {
        Some(table) => print!("{table}"),
        None => println!("no ambiguous calls"),
    }
    Ok(Outcome::Ok)
}

/// `airlock approvals reconcile CALL ran|did_not_run [--reason R]`.
pub fn reconcile(
    client: &Client,
    call_id: &str,
    resolution: Resolution,
    reason: Option<String>,
    as_json: bool,
) -> anyhow::Result<Outcome> {
    let path = format!("/v1/calls/{}/reconcile", encode(call_id));
    let value = client.post(&path, &ReconcileRequest { resolution, reason })?;
    if as_json {
        print_json(&value)?;
        return Ok(Outcome::Ok);
    }
    let call: Call = parse(&value, "a call")?;
    let next = match resolution {
        Resolution::Ran => "recorded as run",
        Resolution::DidNotRun => {
            "recorded as never run: the agent's next identical call is asked afresh"
        }
    };
    print!(
        "{}",
        fields(&[
            ("call", call.id.clone()),
            ("tool", call.tool.clone()),
            ("resolution", resolution.to_string()),
            (
                "reason",
                or_dash(
                    call.reconciliation
                        .as_ref()
                        .and_then(|r| r.reason.as_deref())
                )
            ),
            ("now", next.to_owned()),
        ])
    );
    Ok(Outcome::Ok)
}
