//! Verifying a stored chain longer than one page. `Gate::verify_audit` reads pages ahead
//! on the guess that the chain has no gap, and must fall back to reading from where a
//! page really ends when it has one. Whatever the pages, and however many are read at
//! once, its verdict is the one the same records get as an export: intact, with a record
//! deleted at a page's edge or inside a page, or with a record's data rewritten.

use super::harness::Harness;
use airlock_gate::audit::verify_export;
use airlock_protocol::VerifyReport;
use airlock_store::sqlite::SqliteStore;
use airlock_store::{AuditEntry, Effects, Store};
use serde_json::json;
use sqlx::{Connection, SqliteConnection};

/// Records appended beside the harness's own: 22 of the gate's pages of 1,000 (two of
/// 10,000 and a part when pages were that long).
const RECORDS: u64 = 22_000;

/// The workspace's chain as an export (NDJSON), read through the gate.
async fn exported(h: &Harness) -> String {
    let mut text = String::new();
    let mut after = 0;
    loop {
        let page = h.gate.audit_after(&h.owner, after, 1000).await.unwrap();
        let Some(last) = page.last() else {
            return text;
        };
        after = last.seq;
        for record in &page {
            text.push_str(&serde_json::to_string(record).unwrap());
            text.push('\n');
        }
    }
}

/// The verdict from the store and from the export, compared on what both report; the
/// store's is the same whether one, two, three, four or sixteen (the most; 100 asked)
/// pages are read at once.
async fn both_verdicts(h: &Harness) -> (VerifyReport, VerifyReport) {
    let stored = h.gate.verify_audit(&h.owner).await.unwrap();
    for at_once in [1, 2, 3, 4, 100] {
        let reading = h
            .gate
            .verify_audit_reading(&h.owner, at_once)
            .await
            .unwrap();
        assert_eq!(reading, stored, "{at_once} pages at once");
    }
    let export = verify_export(&exported(h).await);
    assert_eq!(
        (
            stored.ok,
            stored.records,
            stored.first_bad_seq,
            &stored.head
        ),
        (
            export.ok,
            export.records,
            export.first_bad_seq,
            &export.head
        ),
        "store {stored:?}\nexport {export:?}"
    );
    (stored, export)
}

/// The harness's database opened beside it: its path, the store, the workspace and the
/// agent whose updates carry the records appended.
async fn opened(
    h: &Harness,
) -> (
    std::path::PathBuf,
    SqliteStore,
    String,
    airlock_protocol::Agent,
) {
    let path = h.dir.path().join("airlock.db");
    let store = SqliteStore::open(&path).await.unwrap();
    let workspace = h.owner.workspace.clone();
    let agent = store
        .get_agent(&workspace, &h.agent_id)
        .await
        .unwrap()
        .unwrap();
    (path, store, workspace, agent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_of_several_pages_verifies_as_its_export_does() {
    let h = Harness::new().await;
    let (path, store, workspace, agent) = opened(&h).await;
    let mut written = 0;
    while written < RECORDS {
        let mut effects = Effects::none();
        for n in written..(written + 5_000).min(RECORDS) {
            effects = effects.audit(AuditEntry {
                at: h.gate.now(),
                actor: "agent:scout".into(),
                kind: "call.allowed".into(),
                subject: format!("call_{n}"),
                data:
                    json!({"n": n, "tool": "fs.read", "arguments": {"path": format!("/srv/{n}")}})
                        .into(),
            });
        }
        store
            .update_agent(&workspace, &agent, &effects)
            .await
            .unwrap();
        written = (written + 5_000).min(RECORDS);
    }
    let (intact, _) = both_verdicts(&h).await;
    assert!(intact.ok, "{intact:?}");
    assert!(intact.records > RECORDS, "{intact:?}");

    let mut conn = SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    // A record deleted inside a page, then at a page's edge, then data rewritten: each
    // time the first break is where the export finds it.
    for (tamper, at) in [
        ("DELETE FROM audit WHERE seq = ?", 15_123),
        ("DELETE FROM audit WHERE seq = ?", 20_000),
        ("DELETE FROM audit WHERE seq = ?", 10_000),
        ("UPDATE audit SET data = '{\"n\":0}' WHERE seq = ?", 5_000),
    ] {
        let changed = sqlx::query(tamper)
            .bind(i64::try_from(at).unwrap())
            .execute(&mut conn)
            .await
            .unwrap();
        assert_eq!(changed.rows_affected(), 1, "{tamper} {at}");
        let (broken, _) = both_verdicts(&h).await;
        assert!(!broken.ok, "{tamper} {at}: {broken:?}");
        assert!(
            broken.first_bad_seq.is_some_and(|seq| seq <= at + 1),
            "{tamper} {at}: {broken:?}"
        );
    }
}

/// The verifier hashes a record's `data` as the store keeps it (canonical JSON) before
/// canonicalizing it: every column a tamperer can rewrite must still break the chain at
/// its record, and only a rewrite of `data` that keeps its meaning (spaced, reordered)
/// still verifies, as it did when every record was canonicalized first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_column_rewritten_in_the_store_breaks_the_chain_at_its_record() {
    let h = Harness::new().await;
    let (path, store, workspace, agent) = opened(&h).await;
    let mut effects = Effects::none();
    for n in 0..40 {
        effects = effects.audit(AuditEntry {
            at: h.gate.now(),
            actor: "agent:scout".into(),
            kind: "call.allowed".into(),
            subject: format!("call_{n}"),
            data: json!({"tool": "fs.read", "n": n, "arguments": {"path": format!("/srv/{n}"), "all": true}}).into(),
        });
    }
    store
        .update_agent(&workspace, &agent, &effects)
        .await
        .unwrap();
    let (intact, _) = both_verdicts(&h).await;
    assert!(intact.ok, "{intact:?}");
    let mut conn = SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let seq = intact.records - 20;
    let stored: String = sqlx::query_scalar("SELECT data FROM audit WHERE seq = ?")
        .bind(i64::try_from(seq).unwrap())
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert!(
        stored.starts_with(r#"{"arguments":{"all":true,"path":"#),
        "{stored}"
    );
    let same_meaning =
        serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(&stored).unwrap())
            .unwrap()
            .replace("\"tool\"", "\"tool\" ");
    let changed_meaning = stored.replace("fs.read", "fs.write");
    let rewrites = [
        ("at", "2020-01-01T00:00:00Z".to_owned(), false),
        ("actor", "user:mallory".to_owned(), false),
        ("kind", "call.denied".to_owned(), false),
        ("subject", "call_other".to_owned(), false),
        ("data", changed_meaning, false),
        ("data", "{}".to_owned(), false),
        ("prev_hash", "0".repeat(64), false),
        ("hash", "f".repeat(64), false),
        ("data", same_meaning, true),
    ];
    for (column, value, still_ok) in rewrites {
        let original: String =
            sqlx::query_scalar(&format!("SELECT {column} FROM audit WHERE seq = ?"))
                .bind(i64::try_from(seq).unwrap())
                .fetch_one(&mut conn)
                .await
                .unwrap();
        for written in [&value, &original] {
            let changed = sqlx::query(&format!("UPDATE audit SET {column} = ? WHERE seq = ?"))
                .bind(written)
                .bind(i64::try_from(seq).unwrap())
                .execute(&mut conn)
                .await
                .unwrap();
            assert_eq!(changed.rows_affected(), 1);
            let (report, _) = both_verdicts(&h).await;
            if written == &original || still_ok {
                assert!(report.ok, "{column} = {written}: {report:?}");
            } else {
                assert_eq!(
                    report.first_bad_seq,
                    Some(seq),
                    "{column} = {written}: {report:?}"
                );
            }
        }
    }
}

/// A chain whose oldest records were sealed into segments verifies as its export does,
/// and an edit to a segment breaks it where the edited record is: a value rewritten in
/// place, a segment cut short (unreadable: a break at its first record), a segment
/// deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sealed_chain_verifies_as_its_export_does_and_breaks_where_it_was_edited() {
    let h = Harness::new().await;
    let (path, store, workspace, agent) = opened(&h).await;
    let mut effects = Effects::none();
    for n in 0..5_500 {
        effects = effects.audit(AuditEntry {
            at: h.gate.now(),
            actor: "agent:scout".into(),
            kind: "call.allowed".into(),
            subject: format!("call_{n}"),
            data: json!({"n": n, "arguments": {"path": format!("/srv/{n:05}")}}).into(),
        });
    }
    store
        .update_agent(&workspace, &agent, &effects)
        .await
        .unwrap();
    let seq_of = |subject: &'static str| {
        let gate = h.gate.clone();
        let owner = h.owner.clone();
        async move {
            let mut after = 0;
            loop {
                let page = gate.audit_after(&owner, after, 1000).await.unwrap();
                if let Some(record) = page.iter().find(|record| record.subject == subject) {
                    return record.seq;
                }
                after = page.last().unwrap().seq;
            }
        }
    };
    let before = h.gate.verify_audit(&h.owner).await.unwrap();
    assert_eq!(h.gate.seal_audit_once().await.unwrap(), 5_000);
    let (sealed, _) = both_verdicts(&h).await;
    assert!(sealed.ok, "{sealed:?}");
    assert_eq!(sealed, before);

    let mut conn = SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let edited = seq_of("call_2500").await;
    let (first, body): (i64, Vec<u8>) = sqlx::query_as(
        "SELECT first_seq, body FROM audit_segments WHERE first_seq <= ? AND last_seq >= ?",
    )
    .bind(i64::try_from(edited).unwrap())
    .bind(i64::try_from(edited).unwrap())
    .fetch_one(&mut conn)
    .await
    .unwrap();
    let put = |body: Vec<u8>| {
        sqlx::query("UPDATE audit_segments SET body = ? WHERE first_seq = ?")
            .bind(body)
            .bind(first)
    };

    // A value rewritten in place, the same length: the record no longer hashes.
    let at = body
        .windows(11)
        .position(|window| window == b"/srv/02500\"")
        .unwrap();
    let mut rewritten = body.clone();
    rewritten[at + 5] = b'9';
    put(rewritten).execute(&mut conn).await.unwrap();
    let (broken, _) = both_verdicts(&h).await;
    assert_eq!(broken.first_bad_seq, Some(edited), "{broken:?}");

    // Cut short: it cannot be read, and the break is at its first record, whichever pages
    // are read at once.
    put(body[..body.len() / 2].to_vec())
        .execute(&mut conn)
        .await
        .unwrap();
    for at_once in [1, 2, 4] {
        let cut = h
            .gate
            .verify_audit_reading(&h.owner, at_once)
            .await
            .unwrap();
        assert!(!cut.ok, "{cut:?}");
        assert_eq!(cut.first_bad_seq, Some(u64::try_from(first).unwrap()));
        assert!(
            cut.problem.as_deref().unwrap().contains("audit_segments"),
            "{cut:?}"
        );
    }

    // Deleted: the records it held are missing.
    sqlx::query("DELETE FROM audit_segments WHERE first_seq = ?")
        .bind(first)
        .execute(&mut conn)
        .await
        .unwrap();
    let (missing, _) = both_verdicts(&h).await;
    assert_eq!(missing.first_bad_seq, Some(u64::try_from(first).unwrap()));
    assert_eq!(missing.records, before.records - 1_000);
    // Three deleted in a row: the seqs jump further than a segment holds, and the records
    // after the gap are still all read.
    let gone = sqlx::query("DELETE FROM audit_segments WHERE first_seq > ? AND first_seq < ?")
        .bind(first)
        .bind(first + 2_500)
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(gone.rows_affected(), 2);
    let (gap, _) = both_verdicts(&h).await;
    assert_eq!(gap.first_bad_seq, Some(u64::try_from(first).unwrap()));
    assert_eq!(gap.records, before.records - 3_000);
    assert_eq!(gap.head, before.head);
}

/// Appends `count` records to the harness's chain through `store`.
async fn append(
    store: &SqliteStore,
    h: &Harness,
    workspace: &str,
    agent: &airlock_protocol::Agent,
    count: u64,
) {
    let mut effects = Effects::none();
    for n in 0..count {
        effects = effects.audit(AuditEntry {
            at: h.gate.now(),
            actor: "agent:scout".into(),
            kind: "call.allowed".into(),
            subject: format!("call_{n}"),
            data: json!({"n": n, "tool": "fs.read"}).into(),
        });
    }
    store
        .update_agent(workspace, agent, &effects)
        .await
        .unwrap();
}

/// Records deleted from the chain's end leave a shorter chain that verifies on its own;
/// the head the store keeps apart from the records (`audit_heads`) shows them missing,
/// and records appended again in their place are not taken for the ones that were there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_deleted_from_the_chains_end_are_found_online() {
    let h = Harness::new().await;
    let (path, store, workspace, agent) = opened(&h).await;
    append(&store, &h, &workspace, &agent, 10).await;
    let intact = h.gate.verify_audit(&h.owner).await.unwrap();
    assert!(intact.ok, "{intact:?}");
    let head = intact.head.unwrap().seq;

    let mut conn = SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    sqlx::query("DELETE FROM audit WHERE seq > ?")
        .bind(i64::try_from(head - 2).unwrap())
        .execute(&mut conn)
        .await
        .unwrap();
    let cut = h.gate.verify_audit(&h.owner).await.unwrap();
    assert!(!cut.ok, "{cut:?}");
    assert_eq!(cut.first_bad_seq, Some(head - 1), "{cut:?}");
    let problem = cut.problem.unwrap();
    assert!(problem.contains("missing from its end"), "{problem}");
    // The export of what is left verifies: only the kept head tells.
    assert!(verify_export(&exported(&h).await).ok);

    // Two new records appended where the deleted ones were: the chain is as long again,
    // but its end is not what was appended there.
    append(&store, &h, &workspace, &agent, 2).await;
    let replaced = h.gate.verify_audit(&h.owner).await.unwrap();
    assert!(!replaced.ok, "{replaced:?}");
    assert_eq!(replaced.first_bad_seq, Some(head), "{replaced:?}");
    assert!(replaced.problem.unwrap().contains("replaced"));
}
