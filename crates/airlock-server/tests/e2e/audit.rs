//! Everything audited, tamper-evident (G8): the chain verifies online; an edited row is
//! located by its seq; the NDJSON export verifies offline, and a torn last line is caught.

use crate::support::{ask, audit_records, decide, server};
use airlock_gate::audit::verify_export;
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn audit_chain_verifies_and_an_edited_row_is_reported_at_its_seq() {
    let (server, agent) = server().await;
    let (_, approval) = ask(&server, &agent, "bob@acme.test").await;
    decide(&server, &server.owner_token, &approval, "approve")
        .await
        .expect_status(200)
        .unwrap();
    let records = audit_records(&server).await;
    assert!(records.len() >= 5, "{records:?}");

    let report = server
        .client
        .get("/v1/audit/verify", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["records"], records.len());
    assert_eq!(report["head"]["seq"], records.last().unwrap()["seq"]);
    assert!(report["first_bad_seq"].is_null());

    // Edit one row behind the server's back, as someone with the database could.
    let changed = server
        .tamper_audit_data(3, &json!({"quietly": "changed"}))
        .await
        .unwrap();
    assert_eq!(changed, 1);

    let report = server
        .client
        .get("/v1/audit/verify", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(report["ok"], false, "{report}");
    assert_eq!(report["first_bad_seq"], 3, "{report}");
}

#[tokio::test]
async fn export_verifies_offline_and_a_torn_last_line_is_detected() {
    let (server, agent) = server().await;
    for to in ["a@acme.test", "b@acme.test"] {
        let (_, approval) = ask(&server, &agent, to).await;
        decide(&server, &server.owner_token, &approval, "reject")
            .await
            .expect_status(200)
            .unwrap();
    }
    let records = audit_records(&server).await;

    let reply = server
        .client
        .raw(
            Method::GET,
            "/v1/audit/export",
            Some(&server.owner_token),
            None,
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 200);
    assert_eq!(reply.content_type(), "application/x-ndjson");
    let export = reply.text;
    assert_eq!(export.lines().count(), records.len());
    assert!(export.ends_with('\n'));
    for (line, record) in export.lines().zip(&records) {
        assert_eq!(
            &serde_json::from_str::<serde_json::Value>(line).unwrap(),
            record
        );
    }
    let report = verify_export(&export);
    assert!(report.ok, "{report:?}");
    assert_eq!(report.records, records.len() as u64);

    let torn = &export[..export.len() - 10];
    let report = verify_export(torn);
    assert!(!report.ok);
    assert!(report.torn_tail, "{report:?}");
}
