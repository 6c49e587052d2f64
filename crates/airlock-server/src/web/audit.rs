//! The audit log (`GET /audit`): records in chain order with kind and actor filters and
//! paging, under a "chain verified" badge that the server computes by walking the whole
//! chain (`Gate::verify_audit`) on every view — the page never takes the chain's word
//! for itself.
//!
//! Without a filter the page opens on the newest records; with one it scans forward from
//! `after` (at most [`SCAN_LIMIT`] records per view) and links on from where it stopped.

use crate::web::error::WebError;
use crate::web::form::{filled, PageQuery};
use crate::web::layout::{self, shorten, when, People};
use crate::web::session::WebUser;
use crate::AppState;
use airlock_gate::audit::VerifyReport;
use airlock_protocol::AuditRecord;
use axum::extract::State;
use axum::response::Response;
use maud::{html, Markup};
use serde::Deserialize;

/// Records shown per page.
const PAGE: usize = 50;
/// Records read per view when filtering.
const SCAN_LIMIT: usize = 20_000;
/// Read from the store at a time.
const BATCH: u32 = 1000;

/// Kinds offered in the filter's suggestions.
const KINDS: &[&str] = &[
    "approval.",
    "approval.requested",
    "approval.approved",
    "approval.rejected",
    "approval.expired",
    "approval.cancelled",
    "call.",
    "call.allowed",
    "call.denied",
    "grant.consumed",
    "policy.updated",
    "rule.",
    "user.created",
    "agent.",
    "web_session.",
];

/// `?kind=approval.&actor=alice&after=120`.
#[derive(Debug, Default, Deserialize)]
pub struct AuditQuery {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    actor: Option<String>,
    #[serde(default)]
    after: Option<u64>,
}

/// `GET /audit`.
pub async fn page(
    State(state): State<AppState>,
    user: WebUser,
    PageQuery(query): PageQuery<AuditQuery>,
) -> Result<Response, WebError> {
    let principal = &user.principal;
    let report = state.gate.verify_audit(principal).await?;
    let people = People::load(&state, &user).await?;
    let kind = filled(query.kind);
    let actor = filled(query.actor);
    let filtered = kind.is_some() || actor.is_some();
    let head = report.head.as_ref().map_or(0, |head| head.seq);
    let start = query.after.unwrap_or(if filtered {
        0
    } else {
        head.saturating_sub(PAGE as u64)
    });
    let matches = |record: &AuditRecord| {
        kind.as_deref()
            .is_none_or(|kind| record.kind.starts_with(kind))
            && actor.as_deref().is_none_or(|actor| {
                record.actor.starts_with(actor)
                    || people.actor(&record.actor).eq_ignore_ascii_case(actor)
            })
    };

    let mut shown: Vec<AuditRecord> = Vec::new();
    let mut cursor = start;
    let mut scanned = 0;
    'scan: loop {
        let batch = state.gate.audit_after(principal, cursor, BATCH).await?;
        let full = batch.len() == BATCH as usize;
        for record in batch {
            cursor = record.seq;
            scanned += 1;
            if matches(&record) {
                shown.push(record);
                if shown.len() == PAGE {
                    break 'scan;
                }
            }
        }
        if !full || scanned >= SCAN_LIMIT {
            break;
        }
    }
    let link = |after: u64| {
        let mut pairs = vec![("after", after.to_string())];
        if let Some(kind) = &kind {
            pairs.push(("kind", kind.clone()));
        }
        if let Some(actor) = &actor {
            pairs.push(("actor", actor.clone()));
        }
        format!(
            "/audit?{}",
            serde_urlencoded::to_string(pairs).unwrap_or_default()
        )
    };
    let older = (!filtered && start > 0).then(|| link(start.saturating_sub(PAGE as u64)));
    let newer = (cursor < head).then(|| link(cursor));

    let body = html! {
        section.audit {
            h1 { "Audit log" }
            (chain_badge(&report))
            form.filters method="get" action="/audit" {
                label { "Kind " input type="text" name="kind" list="kinds" value=[kind.as_deref()] placeholder="approval."; }
                datalist #kinds { @for kind in KINDS { option value=(kind) {} } }
                label { "Actor " input type="text" name="actor" value=[actor.as_deref()] placeholder="alice, user:…, system"; }
                button type="submit" { "Filter" }
                @if filtered { a href="/audit" { "Clear" } }
            }
            @if shown.is_empty() {
                p.empty { "No record matches." }
            } @else {
                div.table-wrap {
                    table.records {
                        thead { tr { th { "#" } th { "When" } th { "Actor" } th { "Kind" } th { "Subject" } th { "Data" } } }
                        tbody {
                            @for record in &shown { (row(record, &people)) }
                        }
                    }
                }
            }
            nav.paging {
                @if let Some(older) = &older { a href=(older) { "← Older" } }
                @if filtered && start > 0 { a href=(link(0)) { "From the start" } }
                @if let Some(newer) = &newer { a href=(newer) { "Newer →" } }
            }
        }
    };
    Ok(layout::ok(layout::page(
        "Audit log",
        Some((&user, "/audit")),
        body,
    )))
}

fn chain_badge(report: &VerifyReport) -> Markup {
    html! {
        @if report.ok {
            p.chain.ok #chain {
                span.badge.chain-ok { "✓ chain verified" }
                " " (report.records) " records"
                @if let Some(head) = &report.head {
                    ", head #" (head.seq) " " code title=(head.hash) { (shorten(&head.hash, 13)) }
                }
            }
        } @else {
            p.chain.bad #chain role="alert" {
                span.badge.chain-bad { "✗ chain broken" }
                @if let Some(seq) = report.first_bad_seq { " at record #" (seq) }
                @if let Some(problem) = &report.problem { ": " (problem) }
            }
        }
    }
}

fn row(record: &AuditRecord, people: &People) -> Markup {
    let subject_link = match record.subject.split_once('_') {
        Some(("apr", _)) => Some(format!("/approvals/{}", record.subject)),
        Some(("ses", _)) => Some(format!("/sessions/{}", record.subject)),
        _ => None,
    };
    let data = record.data.to_string();
    html! {
        tr {
            td.seq { (record.seq) }
            td.when {
                @match record.at.parse::<jiff::Timestamp>() {
                    Ok(at) => (when(at)),
                    Err(_) => (record.at),
                }
            }
            td title=(record.actor) { (people.actor(&record.actor)) }
            td { code { (record.kind) } }
            td {
                @match &subject_link {
                    Some(href) => a href=(href) { code { (record.subject) } },
                    None => code { (record.subject) },
                }
            }
            td.data {
                @if data.chars().count() > 120 {
                    details { summary { (shorten(&data, 120)) } pre { (data) } }
                } @else {
                    code { (data) }
                }
            }
        }
    }
}
