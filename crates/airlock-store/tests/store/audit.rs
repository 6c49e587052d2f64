//! The hash-chained audit log (G8, DESIGN.md §6.3) and the workspace event stream.

use super::fixtures::{effects, policy, t, token_hash, user, world, POLICY_2};
use super::harness::Ctx;
use airlock_digest::digest::{audit_hash, GENESIS_HASH};
use airlock_protocol::{Approval, AuditRecord, Role};
use airlock_store::{AuditEntry, Effects, EventEntry};
use jiff::Timestamp;
use serde_json::json;

/// Checks `records` form a whole chain from the genesis: seq 1..n, each `prev_hash` the
/// previous hash, each hash recomputed from the record as stored.
pub fn assert_chain(records: &[AuditRecord]) {
    let mut prev_hash = GENESIS_HASH.to_owned();
    for (index, record) in records.iter().enumerate() {
        assert_eq!(
            record.seq,
            u64::try_from(index).unwrap() + 1,
            "seq gap at {index}"
        );
        assert_eq!(
            record.prev_hash, prev_hash,
            "broken link at seq {}",
            record.seq
        );
        let without_hash = json!({
            "seq": record.seq,
            "at": record.at,
            "actor": record.actor,
            "kind": record.kind,
            "subject": record.subject,
            "data": record.data,
            "prev_hash": record.prev_hash,
        });
        assert_eq!(
            record.hash,
            audit_hash(&prev_hash, &without_hash),
            "seq {}",
            record.seq
        );
        prev_hash = record.hash.clone();
    }
}

pub async fn audit_chain_is_continuous_and_recomputes(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let ws = world.ws.as_str();
    // Sub-millisecond precision and an offset-free RFC 3339 text: kept exactly as hashed.
    let precise = Timestamp::from_nanosecond(1_735_689_601_123_456_789).unwrap();
    let two = Effects::none()
        .audit(AuditEntry {
            at: precise,
            actor: "system".into(),
            kind: "user.created".into(),
            // A unit separator (U+001F), which SQLite's aggregated page cuts columns at:
            // that page does not add up and is read row by row, with the same rows.
            subject: "usr_b\u{1f}".into(),
            data: json!({"name": "b", "unicode": "é ✓", "big": 12345678901234_u64, "f": 0.1})
                .into(),
        })
        .audit(AuditEntry {
            at: precise,
            actor: "system".into(),
            kind: "token.created".into(),
            subject: "usr_b".into(),
            data: json!([]).into(),
        });
    store
        .create_user(ws, &user("usr_b", Role::Viewer), &token_hash("tok_b"), &two)
        .await
        .unwrap();
    let allowed = world.spec("allowed");
    store
        .record_call(
            ws,
            allowed.allowed(),
            effects("call.allowed", "call_allowed", t(2)),
        )
        .await
        .unwrap();
    let asked = world.spec("asked");
    store
        .record_call(
            ws,
            asked.asked(),
            effects("approval.requested", "apr_asked", t(3)),
        )
        .await
        .unwrap();
    store
        .redeem(
            ws,
            "call_allowed",
            t(4),
            &effects("grant.consumed", "grt_allowed", t(4)),
        )
        .await
        .unwrap();
    let on_cancel = |approval: &Approval| effects("approval.cancelled", &approval.id, t(5));
    store
        .put_policy(
            ws,
            &policy(2, POLICY_2),
            &effects("policy.updated", "2", t(5)),
            "stale",
            &on_cancel,
        )
        .await
        .unwrap();

    let records = store.audit_after(ws, 0, 1000).await.unwrap();
    let kinds: Vec<&str> = records.iter().map(|record| record.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "user.created",
            "token.created",
            "call.allowed",
            "approval.requested",
            "grant.consumed",
            "policy.updated",
            "approval.cancelled",
        ]
    );
    assert_chain(&records);
    assert_eq!(records[0].prev_hash, GENESIS_HASH);
    assert_eq!(records[0].at, precise.to_string());
    assert_eq!(records[0].at, "2025-01-01T00:00:01.123456789Z");
    assert_eq!(records[0].actor, "system");
    assert_eq!(records[0].data["big"], json!(12345678901234_u64));
    assert_eq!(records[2].at, t(2).to_string());
    // The stored record, `hash` member included, also recomputes (as a verifier reads it).
    for record in &records {
        let stored = serde_json::to_value(record).unwrap();
        assert_eq!(record.hash, audit_hash(&record.prev_hash, &stored));
    }

    // Paging by seq.
    let page: Vec<u64> = store
        .audit_after(ws, 2, 2)
        .await
        .unwrap()
        .iter()
        .map(|record| record.seq)
        .collect();
    assert_eq!(page, [3, 4]);
    assert!(store.audit_after(ws, 7, 10).await.unwrap().is_empty());

    // The lean pages verification reads hold the same records, `data` as stored text
    // (from the first record, whose subject holds the separator, and after it).
    assert_eq!(records[0].subject, "usr_b\u{1f}");
    for after in [0, 1] {
        let rows = store.audit_rows_after(ws, after, 1000).await.unwrap();
        let records = &records[usize::try_from(after).unwrap()..];
        assert_eq!(rows.len(), records.len());
        same_rows(&rows, records);
    }
    let rows = store.audit_rows_after(ws, 2, 2).await.unwrap();
    let page: Vec<u64> = rows.iter().map(|row| row.seq).collect();
    assert_eq!(page, [3, 4]);
    assert_eq!(rows.last_seq(), Some(4));
    assert!(store.audit_rows_after(ws, 7, 10).await.unwrap().is_empty());
}

/// Each row holds its record's columns, `data` as the same JSON.
fn same_rows(rows: &airlock_store::AuditRows, records: &[AuditRecord]) {
    for (row, record) in rows.iter().zip(records) {
        assert_eq!(
            [
                row.at,
                row.actor,
                row.kind,
                row.subject,
                row.prev_hash,
                row.hash
            ],
            [
                &record.at,
                &record.actor,
                &record.kind,
                &record.subject,
                &record.prev_hash,
                &record.hash
            ]
        );
        assert_eq!(row.seq, record.seq);
        let data: serde_json::Value = serde_json::from_str(row.data).unwrap();
        assert_eq!(data, record.data);
    }
}

pub async fn audit_chains_are_per_workspace(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    // Interleaved appends to two workspaces.
    for n in 0..3 {
        for ws in [&world.ws, &world.other] {
            let subject = format!("{ws}-{n}");
            let version = u64::try_from(n).unwrap() + 2;
            let changed = effects("policy.updated", &subject, t(n));
            store
                .put_policy(ws, &policy(version, POLICY_2), &changed, "stale", &|_| {
                    Effects::none()
                })
                .await
                .unwrap();
        }
    }
    for ws in [&world.ws, &world.other] {
        let records = store.audit_after(ws, 0, 100).await.unwrap();
        assert_eq!(records.len(), 3);
        assert_chain(&records);
        assert!(records
            .iter()
            .all(|record| record.subject.starts_with(ws.as_str())));
        // Each chain's head is kept apart from its records, on both backends (G8: what
        // `audit verify` compares the chain it reads with).
        let newest = records.last().unwrap();
        assert_eq!(
            store.audit_head(ws).await.unwrap(),
            Some((newest.seq, newest.hash.clone()))
        );
    }
}

pub async fn events_are_read_after_an_id(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    assert_eq!(store.last_event_id(&world.ws).await.unwrap(), 0);
    assert!(store
        .events_after(&world.ws, 0, 10)
        .await
        .unwrap()
        .is_empty());
    let event = |kind: &str, n: i64| EventEntry {
        at: t(n),
        kind: kind.into(),
        data: json!({"n": n}).into(),
    };
    for n in 0..3 {
        let mine = Effects::none()
            .event(event("approval.requested", n))
            .event(event("call.decided", n));
        let theirs = Effects::none().event(event("rule.created", n));
        let mut rule = super::rules::rule(
            &format!("rule_a{n}"),
            airlock_protocol::RuleScope::Agent,
            "agt_a",
            t(n),
            None,
        );
        rule.target = format!("t{n}");
        store
            .create_standing_rule(&world.ws, &rule, &mine)
            .await
            .unwrap();
        rule.id = format!("rule_b{n}");
        store
            .create_standing_rule(&world.other, &rule, &theirs)
            .await
            .unwrap();
    }

    let events = store.events_after(&world.ws, 0, 100).await.unwrap();
    assert_eq!(events.len(), 6);
    assert!(events.windows(2).all(|pair| pair[0].id < pair[1].id));
    let shown: Vec<(&str, i64)> = events
        .iter()
        .map(|event| (event.kind.as_str(), event.data["n"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        shown,
        [
            ("approval.requested", 0),
            ("call.decided", 0),
            ("approval.requested", 1),
            ("call.decided", 1),
            ("approval.requested", 2),
            ("call.decided", 2),
        ]
    );
    assert_eq!(events[2].at, t(1));
    assert_eq!(store.last_event_id(&world.ws).await.unwrap(), events[5].id);

    // Resuming after an id (Last-Event-ID) and paging.
    let after = store
        .events_after(&world.ws, events[1].id, 2)
        .await
        .unwrap();
    assert_eq!(after, events[2..4].to_vec());
    assert!(store
        .events_after(&world.ws, events[5].id, 10)
        .await
        .unwrap()
        .is_empty());

    // The other workspace's events are its own.
    let theirs = store.events_after(&world.other, 0, 100).await.unwrap();
    assert_eq!(theirs.len(), 3);
    assert!(theirs.iter().all(|event| event.kind == "rule.created"));
    assert!(theirs
        .iter()
        .all(|event| !events.iter().any(|mine| mine.id == event.id)));
    assert_eq!(
        store.last_event_id(&world.other).await.unwrap(),
        theirs[2].id
    );
}

/// Appends `count` records to `ws` in one operation (a user created with them).
async fn append_records(store: &dyn airlock_store::Store, ws: &str, user_id: &str, count: usize) {
    let mut many = Effects::none();
    for nth in 0..count {
        many = many.audit(AuditEntry {
            at: t(10),
            actor: "system".into(),
            kind: "approval.requested".into(),
            subject: format!("{user_id}-{nth}"),
            // One record larger than a segment's size (it is a segment alone).
            data: json!({"nth": nth, "text": "é ✓ \u{1f}", "pad": "x".repeat(if nth == 700 { 9_000_000 } else { nth % 300 })}).into(),
        });
    }
    store
        .create_user(
            ws,
            &user(user_id, Role::Viewer),
            &token_hash(user_id),
            &many,
        )
        .await
        .unwrap();
}

/// A backend's own chain reader (`Store::chain_reader`) finds the segments of `ws` that
/// follow one another from a cursor, at most as many as asked, and reads back the records
/// of `chain` (its first 2,000 sealed) from them, whichever reader reads them, and the
/// rest from the rows, by seq range.
fn chain_read_alone_holds_the_same_records(
    [mut reader, mut another]: [Box<dyn airlock_store::ChainReader>; 2],
    ws: &str,
    other: &str,
    chain: &[AuditRecord],
) {
    let sealed = &chain[..2_000];
    let segments = reader.next_segments(ws, 0, 100).unwrap();
    let spans: Vec<(u64, u64)> = segments
        .iter()
        .map(|segment| (segment.first_seq, segment.last_seq))
        .collect();
    // Cut around the 9 MB record (seq 701), as the seal cut them.
    assert_eq!(spans, [(1, 700), (701, 701), (702, 1_000), (1_001, 2_000)]);
    let mut read = Vec::new();
    for (nth, segment) in segments.iter().enumerate() {
        let by = if nth % 2 == 0 {
            &mut reader
        } else {
            &mut another
        };
        let rows = by.read(*segment).unwrap();
        read.extend(rows.iter().map(|row| row.seq));
        let from = usize::try_from(segment.first_seq - 1).unwrap();
        same_rows(&rows, &sealed[from..]);
    }
    assert_eq!(read, (1..=2_000).collect::<Vec<u64>>());
    assert_eq!(reader.next_segments(ws, 700, 2).unwrap(), segments[1..3]);
    for after in [1, 699, 1_999, 2_000, u64::MAX] {
        assert!(
            reader.next_segments(ws, after, 100).unwrap().is_empty(),
            "{after} is not where a segment ends"
        );
    }
    assert!(reader.next_segments(other, 0, 100).unwrap().is_empty());

    let seqs = |rows: &airlock_store::AuditRows| rows.iter().map(|row| row.seq).collect::<Vec<_>>();
    // Sealed records are not rows.
    assert!(reader.read_rows(ws, 0, 2_000).unwrap().is_empty());
    let rows = another.read_rows(ws, 1_990, 2_007).unwrap();
    assert_eq!(seqs(&rows), (2_001..=2_007).collect::<Vec<u64>>());
    same_rows(&rows, &chain[2_000..]);
    let total = u64::try_from(chain.len()).unwrap();
    let tail = reader.read_rows(ws, total - 2, total + 100).unwrap();
    assert_eq!(seqs(&tail), [total - 1, total]);
    same_rows(&tail, &chain[chain.len() - 2..]);
}

/// Every record of `ws`, paged with `audit_after`.
async fn all_records(store: &dyn airlock_store::Store, ws: &str) -> Vec<AuditRecord> {
    let mut records: Vec<AuditRecord> = Vec::new();
    loop {
        let after = records.last().map_or(0, |record| record.seq);
        let page = store.audit_after(ws, after, 1000).await.unwrap();
        if page.is_empty() {
            return records;
        }
        records.extend(page);
    }
}

/// Sealing moves the oldest thousand records of a chain at a time into a segment (cut
/// where a segment would pass 8 MiB: a record that large is a segment alone) and leaves
/// at least the newest in rows; every read (either page, any cursor, any limit)
/// returns the same records before and after, the chain goes on from its head, and
/// another workspace's chain is not touched.
pub async fn sealing_moves_records_and_every_read_stays_the_same(ctx: Ctx) {
    let store = ctx.store.as_ref();
    let world = world(store).await;
    let ws = world.ws.as_str();
    append_records(store, ws, "usr_m1", 1_500).await;
    append_records(store, ws, "usr_m2", 1_100).await;
    append_records(store, &world.other, "usr_o", 700).await;
    let before = all_records(store, ws).await;
    let total = before.len();
    assert!((2_600..3_000).contains(&total), "{total}");
    assert_chain(&before);
    let other_before = all_records(store, &world.other).await;
    assert_eq!(store.workspaces_to_seal().await.unwrap(), [ws.to_owned()]);
    assert_eq!(store.seal_audit(&world.other).await.unwrap(), 0);

    assert_eq!(store.seal_audit(ws).await.unwrap(), 1_000);
    assert_eq!(store.seal_audit(ws).await.unwrap(), 1_000);
    // What is left in rows is not more than a segment: it stays.
    assert_eq!(store.seal_audit(ws).await.unwrap(), 0);
    assert!(store.workspaces_to_seal().await.unwrap().is_empty());
    let rows = ctx.row_counts().await;
    // The first seal is cut around its 9 MB record (seq 701): three segments, then one.
    assert_eq!(rows["audit_segments"], 4, "{rows:?}");
    let other_rows = i64::try_from(other_before.len()).unwrap();
    assert_eq!(
        rows["audit"],
        i64::try_from(total - 2_000).unwrap() + other_rows
    );

    assert_eq!(all_records(store, ws).await, before);
    for after in [
        0,
        1,
        2,
        998,
        999,
        1_000,
        1_001,
        1_999,
        2_000,
        2_001,
        total - 1,
        total,
    ] {
        for limit in [1, 7, 1_000] {
            let from = after.min(total);
            let to = (from + limit).min(total);
            let (cursor, most) = (u64::try_from(after).unwrap(), u32::try_from(limit).unwrap());
            let records = store.audit_after(ws, cursor, most).await.unwrap();
            assert_eq!(records, before[from..to], "audit_after({after}, {limit})");
            let page = store.audit_rows_after(ws, cursor, most).await.unwrap();
            assert_eq!(page.len(), to - from, "audit_rows_after({after}, {limit})");
            same_rows(&page, &before[from..to]);
        }
    }
    assert_eq!(all_records(store, &world.other).await, other_before);
    if let Some(reader) = store.chain_reader().unwrap() {
        let another = store.chain_reader().unwrap().unwrap();
        chain_read_alone_holds_the_same_records([reader, another], ws, &world.other, &before);
    }

    // The chain goes on from its head, which stayed in rows.
    append_records(store, ws, "usr_m3", 3).await;
    let after = all_records(store, ws).await;
    assert_eq!(after.len(), total + 3);
    assert_eq!(after[..total], before[..]);
    assert_chain(&after);
}
