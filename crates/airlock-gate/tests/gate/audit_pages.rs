//! Verifying a stored chain longer than one page. `Gate::verify_audit` reads the page
//! after the next on the guess that the chain has no gap, and must fall back to reading
//! from where the next page really ends when it has one. Whatever the pages, its verdict
//! is the one the same records get as an export: intact, with a record deleted at a
//! page's edge or inside a page, or with a record's data rewritten.

use super::harness::Harness;
use airlock_gate::audit::verify_export;
use airlock_protocol::VerifyReport;
use airlock_store::sqlite::SqliteStore;
use airlock_store::{AuditEntry, Effects, Store};
use serde_json::json;
use sqlx::{Connection, SqliteConnection};

/// Records appended beside the harness's own: two pages of 10,000 and a part.
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

/// The verdict from the store and from the export, compared on what both report.
async fn both_verdicts(h: &Harness) -> (VerifyReport, VerifyReport) {
    let stored = h.gate.verify_audit(&h.owner).await.unwrap();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_of_several_pages_verifies_as_its_export_does() {
    let h = Harness::new().await;
    let path = h.dir.path().join("airlock.db");
    let store = SqliteStore::open(&path).await.unwrap();
    let workspace = h.owner.workspace.clone();
    let agent = store
        .get_agent(&workspace, &h.agent_id)
        .await
        .unwrap()
        .unwrap();
    let mut written = 0;
    while written < RECORDS {
        let mut effects = Effects::none();
        for n in written..(written + 5_000).min(RECORDS) {
            effects = effects.audit(AuditEntry {
                at: h.gate.now(),
                actor: "agent:scout".into(),
                kind: "call.allowed".into(),
                subject: format!("call_{n}"),
                data: json!({"n": n, "tool": "fs.read", "arguments": {"path": format!("/srv/{n}")}}),
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
