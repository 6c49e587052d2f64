//! Calls, approvals and grants as rows: recording a call, reading them back, and the
//! system's closing of a pending approval (expiry, cancellation).
//!
//! The readers are generic over the executor so that an operation's transaction reads
//! the rows it is about to change through its own connection, and plain getters read
//! through the pool.

use super::audit::{append_many, chain_on, Chained};
use super::dialect::{lock_head, Conn, Db, Pool, ORD, SINGLE_WRITER};
use super::policy::digest_in_force;
use super::{all, optional};
use crate::codec::{
    approval_from_row, call_from_row, database, enum_text, json_text, millis, opt_millis,
};
use crate::{ApprovalFilter, Effects, Grant, NewCall, StoreError, StoreResult};
use airlock_protocol::{Approval, ApprovalStatus, Call, CallStatus};
use jiff::Timestamp;
use sqlx::{Executor, QueryBuilder};

pub(crate) const CALL_COLUMNS: &str =
    "id, agent_id, session_id, tool, arguments, risk, status, decided_by, \
     rule, reason, approval_id, grant_id, created_at, decided_at, native_tool, cwd, project, \
     redeemed_at, outcome_status, outcome_detail, outcome_at, ambiguous_at, reconciled, \
     reconciled_by, reconciled_reason, reconciled_at, original_arguments";

pub(crate) const APPROVAL_COLUMNS: &str = "id, call_id, agent_id, session_id, status, tool, risk, \
     preview_summary, preview_body, preview_arguments, rule, reason, binding_digest, \
     policy_digest, standing_target, deadline, created_at, decided_at, decided_by, \
     decision_reason, edited_binding_digest, approvals_required, approvers, votes";

/// Rows per multi-row `INSERT`: far below either database's limit on bound values.
const ROWS_PER_STATEMENT: usize = 256;

/// One call for [`record_calls`], borrowed from a [`Batched`] call or from the caller.
pub(crate) struct CallWrite<'a> {
    pub workspace: &'a str,
    pub call: &'a NewCall,
    pub effects: &'a Effects,
    /// Its grant consumed as it is recorded ([`crate::Store::record_call_redeemed`]).
    pub redeemed: Option<&'a Redeemed>,
}

/// How an allowed call's grant is consumed in the transaction that records it: what
/// [`super::grants::redeem`] would write afterwards, written with the rows instead.
#[derive(Debug, Clone)]
pub(crate) struct Redeemed {
    pub at: Timestamp,
    pub key: Option<String>,
    pub outcome_due: Option<Timestamp>,
    /// The key the call is held under for its agent's next question about it.
    pub hold: Option<String>,
}

/// The same failure for each of `count` calls of a batch that failed as a whole.
pub(crate) fn fail_each(count: usize, error: &StoreError) -> Vec<StoreResult<()>> {
    let text = error.to_string();
    (0..count)
        .map(|_| Err(StoreError::Database(text.clone())))
        .collect()
}

/// A call handed to SQLite's committer or PostgreSQL's batcher: its data moves there
/// whole, since the caller only waits for the outcome.
pub(crate) struct Batched {
    pub workspace: String,
    pub call: NewCall,
    pub effects: Effects,
    pub redeemed: Option<Redeemed>,
}

/// A call waiting for SQLite's committer or PostgreSQL's batcher, with where its outcome
/// goes.
pub(crate) struct QueuedCall {
    pub batched: Batched,
    pub reply: tokio::sync::oneshot::Sender<StoreResult<()>>,
}

impl QueuedCall {
    /// Queues `batched` on `queue`, wakes the committer, and waits for the outcome of the
    /// transaction it was recorded in.
    pub(crate) async fn wait(
        queue: &std::sync::Mutex<Vec<QueuedCall>>,
        wake: &tokio::sync::Notify,
        batched: Batched,
    ) -> StoreResult<()> {
        let (reply, outcome) = tokio::sync::oneshot::channel();
        queue
            .lock()
            .map_err(|_| StoreError::Database("the write queue is poisoned".into()))?
            .push(QueuedCall { batched, reply });
        wake.notify_one();
        outcome
            .await
            .map_err(|_| StoreError::Database("the writer stopped before committing".into()))?
    }

    /// What [`record_calls`] takes of it.
    pub(crate) fn write(&self) -> CallWrite<'_> {
        let batched = &self.batched;
        CallWrite {
            workspace: &batched.workspace,
            call: &batched.call,
            effects: &batched.effects,
            redeemed: batched.redeemed.as_ref(),
        }
    }
}

pub(crate) async fn record_call(
    conn: &mut Conn,
    workspace: &str,
    new_call: &NewCall,
    effects: &Effects,
) -> StoreResult<()> {
    record_calls(
        conn,
        &[CallWrite {
            workspace,
            call: new_call,
            effects,
            redeemed: None,
        }],
    )
    .await
}

/// Records calls as the gate decided them, in order: the workspaces locked (in workspace
/// order, as every transaction locks several), every call row in one multi-row statement,
/// the approvals, the grants in one statement, then the effects ([`append_many`]). SQLite's
/// writer and PostgreSQL's batcher hand many calls at once, and a statement is a round
/// trip: one per batch instead of one per call. A pending call whose approval names a
/// stale policy refuses the whole set (`StalePolicy`); the caller runs the calls one by
/// one when it must know which.
///
/// On SQLite (`dialect::SINGLE_WRITER`) calls without approvals — every call the writer
/// batches — are one round trip after the chain heads are read: the inserts of calls,
/// grants, audit records and events are one string of statements, which its driver runs
/// in one hand-off to the connection's thread (PostgreSQL's extended protocol takes one
/// statement per bound query).
pub(crate) async fn record_calls(conn: &mut Conn, writes: &[CallWrite<'_>]) -> StoreResult<()> {
    let mut workspaces: Vec<&str> = writes.iter().map(|write| write.workspace).collect();
    workspaces.sort_unstable();
    workspaces.dedup();
    let mut heads = Vec::new();
    for workspace in workspaces {
        if let Some((seq, hash)) = lock_head(conn, workspace).await? {
            heads.push((workspace, seq, hash));
        }
    }
    for write in writes {
        if let Some(approval) = &write.call.approval {
            if approval.policy_digest != digest_in_force(&mut *conn, write.workspace).await? {
                return Err(StoreError::StalePolicy);
            }
        }
    }
    let encoded = encode(writes)?;
    let grants = grant_rows(writes);
    let effects = effects_of(writes);
    // An approval's insert numbers its binds (`$n`), which a string of statements cannot
    // share; approvals are never batched, so their calls take the general way.
    if SINGLE_WRITER && writes.iter().all(|write| write.call.approval.is_none()) {
        let chained = chain_on(&mut *conn, &effects, heads).await?;
        run_inserts(conn, ["", ""], &encoded, &grants, &chained).await?;
        return Ok(());
    }
    for chunk in encoded.chunks(ROWS_PER_STATEMENT) {
        let mut insert = QueryBuilder::<Db>::new("");
        push_calls(&mut insert, chunk);
        insert.build().execute(&mut *conn).await.map_err(database)?;
    }
    for write in writes {
        if let Some(approval) = &write.call.approval {
            insert_approval(&mut *conn, write.workspace, approval).await?;
        }
    }
    for chunk in grants.chunks(ROWS_PER_STATEMENT) {
        let mut insert = QueryBuilder::<Db>::new("");
        push_grants(&mut insert, chunk);
        insert.build().execute(&mut *conn).await.map_err(database)?;
    }
    append_many(conn, &effects, heads).await
}

/// Records `writes` and commits them in one round trip, on SQLite's writer when no
/// transaction is open (`dialect::SINGLE_WRITER`; none of them awaits an approval):
/// `BEGIN IMMEDIATE`, [`record_calls`]'s inserts and `COMMIT` are one string of
/// statements. The audit records are chained on `heads` ([`chain_on`]). Returns the heads
/// as the commit left them. On an error the string stopped at its first failing
/// statement, which may leave the transaction open: the caller ends it.
#[allow(
    dead_code,
    reason = "PostgreSQL's copy of this module has no single writer"
)]
pub(crate) async fn commit_calls(
    conn: &mut Conn,
    writes: &[CallWrite<'_>],
    heads: Vec<(&str, u64, String)>,
) -> StoreResult<Vec<(String, u64, String)>> {
    let (encoded, grants, effects) = (encode(writes)?, grant_rows(writes), effects_of(writes));
    let chained = chain_on(&mut *conn, &effects, heads).await?;
    let frame = ["BEGIN IMMEDIATE; ", "; COMMIT"];
    run_inserts(conn, frame, &encoded, &grants, &chained).await?;
    Ok(chained
        .heads()
        .iter()
        .map(|(workspace, seq, hash)| ((*workspace).to_owned(), *seq, hash.clone()))
        .collect())
}

/// Runs the inserts of calls, grants, audit records and events as one string of
/// statements separated by `; `, between `frame`'s two parts (SQLite only).
async fn run_inserts(
    conn: &mut Conn,
    frame: [&str; 2],
    encoded: &[CallRow<'_>],
    grants: &[GrantRow<'_>],
    chained: &Chained<'_>,
) -> StoreResult<()> {
    let mut statements = QueryBuilder::<Db>::new(frame[0]);
    for (index, chunk) in encoded.chunks(ROWS_PER_STATEMENT).enumerate() {
        if index > 0 {
            statements.push("; ");
        }
        push_calls(&mut statements, chunk);
    }
    for chunk in grants.chunks(ROWS_PER_STATEMENT) {
        statements.push("; ");
        push_grants(&mut statements, chunk);
    }
    chained.push_inserts(&mut statements);
    statements.push(frame[1]);
    statements
        .build()
        .execute(&mut *conn)
        .await
        .map_err(database)?;
    Ok(())
}

/// Each call's workspace and effects, in order.
fn effects_of<'a>(writes: &'a [CallWrite<'a>]) -> Vec<(&'a str, &'a Effects)> {
    writes
        .iter()
        .map(|write| (write.workspace, write.effects))
        .collect()
}

/// Each call with its arguments and `decided_by` as text.
fn encode<'a>(writes: &'a [CallWrite<'a>]) -> StoreResult<Vec<CallRow<'a>>> {
    writes
        .iter()
        .map(|write| {
            Ok((
                write,
                json_text(&write.call.call.arguments)?,
                enum_text(&write.call.call.decided_by)?,
            ))
        })
        .collect()
}

/// The grants of `writes`, each with how it is consumed as it is recorded.
fn grant_rows<'a>(writes: &'a [CallWrite<'a>]) -> Vec<GrantRow<'a>> {
    writes
        .iter()
        .filter_map(|write| Some((write.workspace, write.call.grant.as_ref()?, write.redeemed)))
        .collect()
}

/// A call to insert with its arguments and `decided_by` as text.
type CallRow<'a> = (&'a CallWrite<'a>, String, String);

/// A grant to insert: its workspace, the grant, how it is consumed as it is recorded.
type GrantRow<'a> = (&'a str, &'a Grant, Option<&'a Redeemed>);

/// Pushes one multi-row `INSERT` of calls onto `insert`.
fn push_calls<'q>(insert: &mut QueryBuilder<'q, Db>, chunk: &'q [CallRow<'_>]) {
    insert.push(
        "INSERT INTO calls (id, workspace, agent_id, session_id, tool, arguments, risk, status,
                            decided_by, rule, reason, approval_id, grant_id, created_at,
                            decided_at, native_tool, cwd, project, redeemed_at,
                            outcome_due_at, retry_key) ",
    );
    insert.push_values(chunk, |mut row, (write, arguments, decided_by)| {
        let call = &write.call.call;
        let redeemed = write.redeemed;
        row.push_bind(&call.id)
            .push_bind(write.workspace)
            .push_bind(&call.agent_id)
            .push_bind(&call.session_id)
            .push_bind(&call.tool)
            .push_bind(arguments)
            .push_bind(call.risk.as_str())
            .push_bind(call.status.as_str())
            .push_bind(decided_by)
            .push_bind(&call.rule)
            .push_bind(&call.reason)
            .push_bind(&call.approval_id)
            .push_bind(&call.grant_id)
            .push_bind(millis(call.created_at))
            .push_bind(opt_millis(call.decided_at))
            .push_bind(&call.native_tool)
            .push_bind(&call.cwd)
            .push_bind(&call.project)
            .push_bind(redeemed.map(|redeemed| millis(redeemed.at)))
            .push_bind(redeemed.and_then(|redeemed| opt_millis(redeemed.outcome_due)))
            .push_bind(redeemed.and_then(|redeemed| redeemed.hold.as_deref()));
    });
}

/// Pushes one multi-row `INSERT` of grants onto `insert`.
fn push_grants<'q>(insert: &mut QueryBuilder<'q, Db>, chunk: &'q [GrantRow<'_>]) {
    insert.push(
        "INSERT INTO grants (id, workspace, call_id, created_at, consumed_at, idempotency_key) ",
    );
    insert.push_values(chunk, |mut row, (workspace, grant, redeemed)| {
        // Consumed in the statement that creates it: no one can have redeemed it
        // before (G1).
        let consumed_at = redeemed.map_or(grant.consumed_at, |redeemed| Some(redeemed.at));
        row.push_bind(&grant.id)
            .push_bind(*workspace)
            .push_bind(&grant.call_id)
            .push_bind(millis(grant.created_at))
            .push_bind(opt_millis(consumed_at))
            .push_bind(redeemed.and_then(|redeemed| redeemed.key.as_deref()));
    });
}

async fn insert_approval(conn: &mut Conn, workspace: &str, approval: &Approval) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO approvals (id, workspace, call_id, agent_id, session_id, status, tool, risk,
                                preview_summary, preview_body, preview_arguments, rule, reason,
                                binding_digest, policy_digest, standing_target, deadline,
                                created_at, decided_at, decided_by, decision_reason,
                                approvals_required, approvers)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)",
    )
    .bind(&approval.id)
    .bind(workspace)
    .bind(&approval.call_id)
    .bind(&approval.agent_id)
    .bind(&approval.session_id)
    .bind(approval.status.as_str())
    .bind(&approval.tool)
    .bind(approval.risk.as_str())
    .bind(&approval.preview.summary)
    .bind(&approval.preview.body)
    .bind(json_text(&approval.preview.arguments)?)
    .bind(&approval.rule)
    .bind(&approval.reason)
    .bind(&approval.binding_digest)
    .bind(&approval.policy_digest)
    .bind(&approval.standing_target)
    .bind(millis(approval.deadline))
    .bind(millis(approval.created_at))
    .bind(opt_millis(approval.decided_at))
    .bind(&approval.decided_by)
    .bind(&approval.decision_reason)
    .bind(i64::from(approval.approvals_required.unwrap_or(1)))
    .bind(if approval.approvers.is_empty() {
        None
    } else {
        Some(json_text(&approval.approvers)?)
    })
    .execute(conn)
    .await
    .map_err(database)?;
    Ok(())
}

pub(crate) async fn insert_grant(
    conn: &mut Conn,
    workspace: &str,
    grant: &Grant,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO grants (id, workspace, call_id, created_at, consumed_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(&grant.id)
    .bind(workspace)
    .bind(&grant.call_id)
    .bind(millis(grant.created_at))
    .bind(opt_millis(grant.consumed_at))
    .execute(conn)
    .await
    .map_err(database)?;
    Ok(())
}

pub(crate) async fn fetch_call<'e, E>(
    executor: E,
    workspace: &str,
    id: &str,
) -> StoreResult<Option<Call>>
where
    E: Executor<'e, Database = Db>,
{
    let sql = format!("SELECT {CALL_COLUMNS} FROM calls WHERE workspace = $1 AND id = $2");
    let query = sqlx::query(&sql).bind(workspace).bind(id);
    optional(query, executor, call_from_row).await
}

pub(crate) async fn fetch_approval<'e, E>(
    executor: E,
    workspace: &str,
    id: &str,
) -> StoreResult<Option<Approval>>
where
    E: Executor<'e, Database = Db>,
{
    let sql = format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE workspace = $1 AND id = $2");
    let query = sqlx::query(&sql).bind(workspace).bind(id);
    optional(query, executor, approval_from_row).await
}

pub(crate) async fn list_approvals(
    pool: &Pool,
    workspace: &str,
    filter: &ApprovalFilter,
) -> StoreResult<Vec<Approval>> {
    let mut sql = format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE workspace = $1");
    let mut next = 1;
    let mut placeholder = || {
        next += 1;
        format!("${next}")
    };
    if filter.status.is_some() {
        sql.push_str(&format!(" AND status = {}", placeholder()));
    }
    if filter.session_id.is_some() {
        sql.push_str(&format!(" AND session_id = {}", placeholder()));
    }
    if filter.run_id.is_some() {
        sql.push_str(&format!(
            " AND call_id IN (SELECT s.call_id FROM run_steps s WHERE s.workspace = $1 AND s.run_id = {})",
            placeholder()
        ));
    }
    if filter.before.is_some() {
        sql.push_str(&format!(
            " AND (created_at, {ORD}) < (SELECT b.created_at, b.{ORD} FROM approvals b WHERE b.workspace = $1 AND b.id = {})",
            placeholder()
        ));
    }
    // Insertion order (ORD) breaks ties between approvals created in the same millisecond: later insert,
    // newer approval.
    sql.push_str(&format!(
        " ORDER BY created_at DESC, {ORD} DESC LIMIT {}",
        placeholder()
    ));
    let mut query = sqlx::query(&sql).bind(workspace);
    if let Some(status) = filter.status {
        query = query.bind(status.as_str());
    }
    if let Some(session_id) = &filter.session_id {
        query = query.bind(session_id);
    }
    if let Some(run_id) = &filter.run_id {
        query = query.bind(run_id);
    }
    if let Some(before) = &filter.before {
        query = query.bind(before);
    }
    all(query.bind(i64::from(filter.limit)), pool, approval_from_row).await
}

/// How the system (not a person) closes a pending approval.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SystemClose<'a> {
    /// `Expired` or `Cancelled`.
    pub status: ApprovalStatus,
    /// The matching call status.
    pub call_status: CallStatus,
    pub at: Timestamp,
    /// The approval's `decision_reason`, also the call's `reason`.
    pub reason: &'a str,
}

/// Moves one approval from `pending` to `close.status`, and its call along, with
/// `decided_by` `system`. Returns the approval as it is afterwards, or `None` when it was
/// no longer pending (someone else closed it first; nothing is written then).
pub(crate) async fn close_by_system(
    conn: &mut Conn,
    workspace: &str,
    approval_id: &str,
    close: SystemClose<'_>,
) -> StoreResult<Option<Approval>> {
    let updated = sqlx::query(
        "UPDATE approvals SET status = $1, decided_at = $2, decided_by = 'system', decision_reason = $3
         WHERE id = $4 AND workspace = $5 AND status = 'pending'",
    )
    .bind(close.status.as_str())
    .bind(millis(close.at))
    .bind(close.reason)
    .bind(approval_id)
    .bind(workspace)
    .execute(&mut *conn)
    .await
    .map_err(database)?;
    if updated.rows_affected() != 1 {
        return Ok(None);
    }
    // The call's reason becomes the closing reason: it is what the caller (and the model)
    // reads to learn why the call will not run (G10).
    sqlx::query(
        "UPDATE calls SET status = $1, decided_by = 'system', decided_at = $2, reason = $3
         WHERE workspace = $4 AND status = 'pending'
           AND id = (SELECT call_id FROM approvals WHERE id = $5)",
    )
    .bind(close.call_status.as_str())
    .bind(millis(close.at))
    .bind(close.reason)
    .bind(workspace)
    .bind(approval_id)
    .execute(&mut *conn)
    .await
    .map_err(database)?;
    fetch_approval(&mut *conn, workspace, approval_id).await
}
