//! A batch of one workspace's calls as one statement: what the batcher sends instead of
//! the general path's eight (`sql::calls::record_calls`).
//!
//! Every column travels as an array (`unnest`), so the statement's text is the same
//! whatever the batch's size: prepared once per connection, where multi-row `VALUES`
//! would be a new statement, parsed and planned (one more round trip), for each size.
//!
//! The chain head is not read first: the batcher chains the records on the head the
//! batch before moved (or that was read), and the statement moves the head only from
//! that one. It locks the head row first (`FOR UPDATE`: waiting, if another transaction
//! holds it, until that one ends, then reading the row as it left it), and updates it
//! only when it is the head the batch was chained on. Every row is inserted from that
//! update's row, so when the head in the database is another one (a write of another
//! operation or node came between, or the batch before did not commit) the statement
//! writes nothing and answers `None`; the caller reads the head, already locked, and
//! sends the statement again in the same transaction. A plain
//! `UPDATE … WHERE seq = old` would not do: at READ COMMITTED it skips, without waiting,
//! a row whose committed version does not match yet, so a batch sent while the one before
//! it commits would always miss. The outer query reads the head first, so the head row
//! is locked before any other row is written (`dialect::lock_workspace`), and the event
//! ids are drawn under that lock.

use super::super::dialect::CHANNEL;
use super::super::sql::audit::chain_on;
use super::super::sql::calls::CallWrite;
use crate::codec::{database, enum_text, json_text, millis, opt_millis, to_i64};
use crate::StoreResult;
use sqlx::{PgConnection, Row};

/// A chain's end: its last `seq` and that record's hash.
pub(crate) type Head = (u64, String);

const STATEMENT: &str = "
WITH locked AS (
    SELECT seq, hash FROM audit_heads WHERE workspace = $1 FOR UPDATE
),
head AS (
    UPDATE audit_heads SET seq = $2, hash = $3
    FROM locked
    WHERE audit_heads.workspace = $1 AND locked.seq = $4 AND locked.hash = $5
    RETURNING audit_heads.workspace
),
new_calls AS (
    INSERT INTO calls (id, workspace, agent_id, session_id, tool, arguments, risk, status,
                       decided_by, rule, reason, approval_id, grant_id, created_at,
                       decided_at, native_tool, cwd, project, redeemed_at, outcome_due_at,
                       retry_key)
    SELECT c.id, head.workspace, c.agent_id, c.session_id, c.tool, c.arguments, c.risk,
           c.status, c.decided_by, c.rule, c.reason, c.approval_id, c.grant_id,
           c.created_at, c.decided_at, c.native_tool, c.cwd, c.project, c.redeemed_at,
           c.outcome_due_at, c.retry_key
    FROM head, unnest($6::text[], $7::text[], $8::text[], $9::text[], $10::text[],
                      $11::text[], $12::text[], $13::text[], $14::text[], $15::text[],
                      $16::text[], $17::text[], $18::int8[], $19::int8[], $20::text[],
                      $21::text[], $22::text[], $23::int8[], $24::int8[], $25::text[])
         AS c(id, agent_id, session_id, tool, arguments, risk, status, decided_by, rule,
              reason, approval_id, grant_id, created_at, decided_at, native_tool, cwd,
              project, redeemed_at, outcome_due_at, retry_key)
),
new_grants AS (
    INSERT INTO grants (id, workspace, call_id, created_at, consumed_at, idempotency_key)
    SELECT g.id, head.workspace, g.call_id, g.created_at, g.consumed_at, g.idempotency_key
    FROM head, unnest($26::text[], $27::text[], $28::int8[], $29::int8[], $30::text[])
         AS g(id, call_id, created_at, consumed_at, idempotency_key)
),
new_audit AS (
    INSERT INTO audit (workspace, seq, at, actor, kind, subject, data, prev_hash, hash)
    SELECT head.workspace, a.seq, a.at, a.actor, a.kind, a.subject, a.data, a.prev_hash,
           a.hash
    FROM head, unnest($31::int8[], $32::text[], $33::text[], $34::text[], $35::text[],
                      $36::text[], $37::text[], $38::text[])
         AS a(seq, at, actor, kind, subject, data, prev_hash, hash)
),
new_events AS (
    INSERT INTO events (workspace, kind, at, data)
    SELECT head.workspace, e.kind, e.at, e.data
    FROM head, unnest($39::text[], $40::int8[], $41::text[])
         WITH ORDINALITY AS e(kind, at, data, n)
    ORDER BY e.n
    RETURNING id, kind
)
SELECT (SELECT count(*) FROM head) AS heads,
       (SELECT count(*) FROM (
            SELECT pg_notify($43, json_build_object('workspace', $1::text, 'id', e.id,
                                                    'kind', e.kind,
                                                    'call_id', c.call_id)::text)
            FROM (SELECT id, kind, row_number() OVER (ORDER BY id) AS n FROM new_events) e
            JOIN unnest($42::text[]) WITH ORDINALITY AS c(call_id, n) USING (n)
            ORDER BY e.id
        ) announced) AS announced";

/// Records `writes` (all of `workspace`, none with an approval) and their effects,
/// chained on `head`, in the open transaction on `conn`. The new head, or `None` when
/// `head` is not the database's (then nothing was written).
pub(crate) async fn record(
    conn: &mut PgConnection,
    workspace: &str,
    writes: &[CallWrite<'_>],
    head: Head,
) -> StoreResult<Option<Head>> {
    let effects: Vec<(&str, &crate::Effects)> = writes
        .iter()
        .map(|write| (workspace, write.effects))
        .collect();
    let (old_seq, old_hash) = head;
    let chained = chain_on(vec![(workspace, old_seq, old_hash.clone())], &effects)?;
    let (new_seq, new_hash) = chained
        .heads
        .first()
        .map_or((old_seq, old_hash.clone()), |(_, seq, hash)| {
            (*seq, hash.clone())
        });

    let mut calls = CallColumns::default();
    let mut grants = GrantColumns::default();
    for write in writes {
        calls.push(write)?;
        if let Some(grant) = &write.call.grant {
            let redeemed = write.redeemed;
            // Consumed in the statement that creates it: no one can have redeemed it
            // before (G1).
            let consumed_at = redeemed.map_or(grant.consumed_at, |redeemed| Some(redeemed.at));
            grants.id.push(grant.id.as_str());
            grants.call_id.push(grant.call_id.as_str());
            grants.created_at.push(millis(grant.created_at));
            grants.consumed_at.push(opt_millis(consumed_at));
            grants
                .idempotency_key
                .push(redeemed.and_then(|redeemed| redeemed.key.as_deref()));
        }
    }
    let rows = &chained.rows;
    let events = &chained.events;
    let announced_call_ids: Vec<Option<&str>> = events
        .iter()
        .map(|(_, event, _)| {
            event
                .data
                .get("call_id")
                .and_then(|call_id| call_id.as_str())
        })
        .collect();
    let row = sqlx::query(STATEMENT)
        .bind(workspace)
        .bind(to_i64(new_seq)?)
        .bind(&new_hash)
        .bind(to_i64(old_seq)?)
        .bind(&old_hash)
        .bind(calls.id)
        .bind(calls.agent_id)
        .bind(calls.session_id)
        .bind(calls.tool)
        .bind(calls.arguments)
        .bind(calls.risk)
        .bind(calls.status)
        .bind(calls.decided_by)
        .bind(calls.rule)
        .bind(calls.reason)
        .bind(calls.approval_id)
        .bind(calls.grant_id)
        .bind(calls.created_at)
        .bind(calls.decided_at)
        .bind(calls.native_tool)
        .bind(calls.cwd)
        .bind(calls.project)
        .bind(calls.redeemed_at)
        .bind(calls.outcome_due_at)
        .bind(calls.retry_key)
        .bind(grants.id)
        .bind(grants.call_id)
        .bind(grants.created_at)
        .bind(grants.consumed_at)
        .bind(grants.idempotency_key)
        .bind(rows.iter().map(|row| row.seq).collect::<Vec<i64>>())
        .bind(rows.iter().map(|row| row.at.as_str()).collect::<Vec<_>>())
        .bind(
            rows.iter()
                .map(|row| row.entry.actor.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(
            rows.iter()
                .map(|row| row.entry.kind.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(
            rows.iter()
                .map(|row| row.entry.subject.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(rows.iter().map(|row| row.data.as_str()).collect::<Vec<_>>())
        .bind(
            rows.iter()
                .map(|row| row.prev_hash.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(rows.iter().map(|row| row.hash.as_str()).collect::<Vec<_>>())
        .bind(
            events
                .iter()
                .map(|(_, event, _)| event.kind.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(
            events
                .iter()
                .map(|(_, event, _)| millis(event.at))
                .collect::<Vec<_>>(),
        )
        .bind(
            events
                .iter()
                .map(|(_, _, data)| data.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(announced_call_ids)
        .bind(CHANNEL)
        .fetch_one(&mut *conn)
        .await
        .map_err(database)?;
    let moved: i64 = row.try_get("heads").map_err(database)?;
    if moved != 1 {
        return Ok(None);
    }
    let announced: i64 = row.try_get("announced").map_err(database)?;
    if usize::try_from(announced).ok() != Some(events.len()) {
        return Err(crate::StoreError::Database(format!(
            "{} events appended, {announced} announced",
            events.len()
        )));
    }
    Ok(Some((new_seq, new_hash)))
}

/// The calls' columns, one array each.
#[derive(Default)]
struct CallColumns<'a> {
    id: Vec<&'a str>,
    agent_id: Vec<&'a str>,
    session_id: Vec<Option<&'a str>>,
    tool: Vec<&'a str>,
    arguments: Vec<String>,
    risk: Vec<&'a str>,
    status: Vec<&'a str>,
    decided_by: Vec<String>,
    rule: Vec<Option<&'a str>>,
    reason: Vec<Option<&'a str>>,
    approval_id: Vec<Option<&'a str>>,
    grant_id: Vec<Option<&'a str>>,
    created_at: Vec<i64>,
    decided_at: Vec<Option<i64>>,
    native_tool: Vec<Option<&'a str>>,
    cwd: Vec<Option<&'a str>>,
    project: Vec<Option<&'a str>>,
    redeemed_at: Vec<Option<i64>>,
    outcome_due_at: Vec<Option<i64>>,
    retry_key: Vec<Option<&'a str>>,
}

impl<'a> CallColumns<'a> {
    /// The same columns as `sql::calls::push_calls` writes.
    fn push(&mut self, write: &'a CallWrite<'a>) -> StoreResult<()> {
        let call = &write.call.call;
        let redeemed = write.redeemed;
        self.id.push(&call.id);
        self.agent_id.push(&call.agent_id);
        self.session_id.push(call.session_id.as_deref());
        self.tool.push(&call.tool);
        self.arguments.push(json_text(&call.arguments)?);
        self.risk.push(call.risk.as_str());
        self.status.push(call.status.as_str());
        self.decided_by.push(enum_text(&call.decided_by)?);
        self.rule.push(call.rule.as_deref());
        self.reason.push(call.reason.as_deref());
        self.approval_id.push(call.approval_id.as_deref());
        self.grant_id.push(call.grant_id.as_deref());
        self.created_at.push(millis(call.created_at));
        self.decided_at.push(opt_millis(call.decided_at));
        self.native_tool.push(call.native_tool.as_deref());
        self.cwd.push(call.cwd.as_deref());
        self.project.push(call.project.as_deref());
        self.redeemed_at
            .push(redeemed.map(|redeemed| millis(redeemed.at)));
        self.outcome_due_at
            .push(redeemed.and_then(|redeemed| opt_millis(redeemed.outcome_due)));
        self.retry_key
            .push(redeemed.and_then(|redeemed| redeemed.hold.as_deref()));
        Ok(())
    }
}

/// The grants' columns, one array each.
#[derive(Default)]
struct GrantColumns<'a> {
    id: Vec<&'a str>,
    call_id: Vec<&'a str>,
    created_at: Vec<i64>,
    consumed_at: Vec<Option<i64>>,
    idempotency_key: Vec<Option<&'a str>>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::postgres::{PgOptions, PostgresStore};
    use crate::test_calls::{allowed_call, at, workspace_with_agent};
    use crate::{AuditEntry, Effects, EventEntry, NewCall, Store};
    use sqlx::Executor;

    fn allowed_effects(id: &str) -> Effects {
        Effects::none()
            .audit(AuditEntry {
                at: at(),
                actor: "agent:agt_a".into(),
                kind: "call.allowed".into(),
                subject: format!("call_{id}"),
                data: serde_json::json!({"id": id}),
            })
            .event(EventEntry {
                at: at(),
                kind: "call.decided".into(),
                data: serde_json::json!({"call_id": format!("call_{id}")}),
            })
    }

    async fn count(conn: &mut PgConnection, table: &str) -> i64 {
        sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
            .fetch_one(conn)
            .await
            .unwrap()
    }

    /// A fresh database with workspace `ws_a` and agent `agt_a`.
    async fn store_with_agent() -> PostgresStore {
        let url = airlock_pgtest::fresh_database().await;
        let store = PostgresStore::connect(&url, PgOptions::default())
            .await
            .unwrap();
        workspace_with_agent(&store).await;
        store
    }

    /// The statement writes every row of the batch on the head it is given and moves the
    /// head; given a head that is no longer the database's, it writes nothing at all.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_is_written_on_its_head_and_not_on_a_stale_one() {
        let store = store_with_agent().await;
        let calls: Vec<(NewCall, Effects)> = (1..=3)
            .map(|n| {
                (
                    allowed_call(&n.to_string()),
                    allowed_effects(&n.to_string()),
                )
            })
            .collect();
        let writes: Vec<CallWrite<'_>> = calls
            .iter()
            .map(|(call, effects)| CallWrite {
                workspace: "ws_a",
                call,
                effects,
                redeemed: None,
            })
            .collect();
        let mut conn = store.pool.acquire().await.unwrap();
        let genesis = (0, airlock_digest::GENESIS_HASH.to_owned());

        conn.execute("BEGIN").await.unwrap();
        let head = record(&mut conn, "ws_a", &writes[..2], genesis.clone())
            .await
            .unwrap()
            .expect("written on the genesis head");
        conn.execute("COMMIT").await.unwrap();
        assert_eq!(head.0, 2);
        for (table, rows) in [("calls", 2), ("grants", 2), ("audit", 2), ("events", 2)] {
            assert_eq!(count(&mut conn, table).await, rows, "{table}");
        }

        // The head has moved on: the genesis head is stale, and nothing is written.
        conn.execute("BEGIN").await.unwrap();
        let stale = record(&mut conn, "ws_a", &writes[2..], genesis)
            .await
            .unwrap();
        assert_eq!(stale, None);
        for (table, rows) in [("calls", 2), ("grants", 2), ("audit", 2), ("events", 2)] {
            assert_eq!(
                count(&mut conn, table).await,
                rows,
                "{table} after a stale head"
            );
        }
        let last = record(&mut conn, "ws_a", &writes[2..], head)
            .await
            .unwrap()
            .expect("written on the current head");
        conn.execute("COMMIT").await.unwrap();
        assert_eq!(last.0, 3);
        drop(conn);

        let records = store.audit_after("ws_a", 0, 10).await.unwrap();
        let links: Vec<(u64, &str, &str)> = records
            .iter()
            .map(|record| (record.seq, record.prev_hash.as_str(), record.hash.as_str()))
            .collect();
        assert_eq!(links.len(), 3);
        assert_eq!(links[0].1, airlock_digest::GENESIS_HASH);
        assert_eq!(links[1].1, links[0].2);
        assert_eq!(links[2].1, links[1].2);
        assert_eq!(links[2].2, last.1);
        let events = store.events_after("ws_a", 0, 10).await.unwrap();
        let ids: Vec<u64> = events.iter().map(|event| event.id).collect();
        assert_eq!(ids, vec![1, 2, 3]);
        let call = store.get_call("ws_a", "call_3").await.unwrap().unwrap();
        assert_eq!(call.cwd.as_deref(), Some("/work"));
        assert_eq!(call.grant_id.as_deref(), Some("grt_3"));
        store.close().await;
    }

    /// A batch sent while the one before it still holds the head row waits for it: when
    /// that one commits, the batch is written on the head it moved (no second try); when
    /// it rolls back, the batch writes nothing (its head never existed).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_waits_for_the_head_of_the_one_before() {
        let store = std::sync::Arc::new(store_with_agent().await);
        let calls: Vec<(NewCall, Effects)> = (1..=4)
            .map(|n| {
                (
                    allowed_call(&n.to_string()),
                    allowed_effects(&n.to_string()),
                )
            })
            .collect();
        let genesis = (0, airlock_digest::GENESIS_HASH.to_owned());
        for first_commits in [true, false] {
            let (first, second) = if first_commits {
                (&calls[0], &calls[1])
            } else {
                (&calls[2], &calls[3])
            };
            let mut before = store.pool.acquire().await.unwrap();
            let on = store.records_head().await;
            before.execute("BEGIN").await.unwrap();
            let writes = [CallWrite {
                workspace: "ws_a",
                call: &first.0,
                effects: &first.1,
                redeemed: None,
            }];
            let moved = record(&mut before, "ws_a", &writes, on.clone())
                .await
                .unwrap()
                .expect("written on the current head");
            let next = {
                let store = std::sync::Arc::clone(&store);
                let (call, effects) = second.clone();
                let moved = moved.clone();
                tokio::spawn(async move {
                    let mut conn = store.pool.acquire().await.unwrap();
                    conn.execute("BEGIN").await.unwrap();
                    let writes = [CallWrite {
                        workspace: "ws_a",
                        call: &call,
                        effects: &effects,
                        redeemed: None,
                    }];
                    let written = record(&mut conn, "ws_a", &writes, moved).await.unwrap();
                    conn.execute("COMMIT").await.unwrap();
                    written
                })
            };
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            assert!(
                !next.is_finished(),
                "the next batch did not wait for the head row"
            );
            before
                .execute(if first_commits { "COMMIT" } else { "ROLLBACK" })
                .await
                .unwrap();
            let written = next.await.unwrap();
            if first_commits {
                assert_eq!(written.map(|head| head.0), Some(moved.0 + 1));
            } else {
                assert_eq!(written, None);
                assert_eq!(store.records_head().await, on);
            }
        }
        assert_ne!(genesis, store.records_head().await);
        let mut conn = store.pool.acquire().await.unwrap();
        assert_eq!(count(&mut conn, "calls").await, 2);
        assert_eq!(count(&mut conn, "audit").await, 2);
    }

    impl PostgresStore {
        /// `ws_a`'s head row.
        async fn records_head(&self) -> Head {
            let (seq, hash): (i64, String) =
                sqlx::query_as("SELECT seq, hash FROM audit_heads WHERE workspace = 'ws_a'")
                    .fetch_one(&self.pool)
                    .await
                    .unwrap();
            (u64::try_from(seq).unwrap(), hash)
        }
    }
}
