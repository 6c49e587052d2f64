//! Browser end-to-end tests of the web inbox: a real server on `127.0.0.1:0`, Debian's
//! chromium (headless) driven by playwright-core from the `*.mjs` scripts of this folder,
//! and assertions on both sides: the script checks what a person sees, these tests check
//! what the API and the audit log say happened.
//!
//! Screenshots at 1280 and 360 px land in `target/browser-artifacts/`. The tests fail,
//! never skip, when chromium or playwright-core (`AIRLOCK_TEST_PLAYWRIGHT`) is missing;
//! `scripts/test.sh` installs both.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    // A scenario's own output is passed on to the test's.
    clippy::print_stderr
)]

mod http;
mod support;

use serde_json::json;
use support::{Fixture, Scenario};

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_asked_through_the_api_appears_live_and_a_click_approves_the_waiting_call() {
    let fixture = Fixture::start().await;
    let mut browser = Scenario::start("inbox", &fixture.server, &fixture.approver, json!({}));
    browser.until("ready").await;

    let (call, approval) = fixture
        .ask(
            "email.send",
            json!({"to": "bob@acme.test", "body": "the report"}),
        )
        .await;
    let waiter = fixture.wait_for(&call).await;
    browser
        .send(json!({
            "approval_id": approval["id"],
            "agent": fixture.agent,
            "summary": approval["preview"]["summary"],
        }))
        .await;
    browser.finish().await;

    let decided = waiter.await.unwrap();
    assert_eq!(decided["status"], "approved", "{decided}");
    let approval = fixture.approval(approval["id"].as_str().unwrap()).await;
    assert_eq!(approval["status"], "approved");
    assert_eq!(
        approval["decided_by"],
        format!("user:{}", fixture.approver_id)
    );
    // The same gate call as the API: one audit record, by the person.
    let approved = fixture.audit("approval.approved").await;
    assert_eq!(approved.len(), 1, "{approved:?}");
    assert_eq!(
        approved[0]["actor"],
        format!("user:{}", fixture.approver_id)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_newest_comes_first_and_keyboard_decisions_hand_a_rejections_reason_to_the_caller() {
    let fixture = Fixture::start().await;
    let (_, oldest) = fixture
        .ask("email.send", json!({"to": "old@acme.test", "body": "1"}))
        .await;
    let (call, newest) = fixture
        .ask("email.send", json!({"to": "new@acme.test", "body": "2"}))
        .await;
    let waiter = fixture.wait_for(&call).await;
    let reason = "not to customers before Monday";
    let input = json!({"newest": newest["id"], "oldest": oldest["id"], "reason": reason});
    Scenario::start("reject", &fixture.server, &fixture.approver, input)
        .finish()
        .await;

    let decided = waiter.await.unwrap();
    assert_eq!(decided["status"], "rejected", "{decided}");
    assert_eq!(
        decided["reason"], reason,
        "the caller gets the person's reason"
    );
    assert!(decided["grant_id"].is_null());
    let oldest = fixture.approval(oldest["id"].as_str().unwrap()).await;
    assert_eq!(oldest["status"], "approved", "`a` approved the other one");
    assert_eq!(
        oldest["decided_by"],
        format!("user:{}", fixture.approver_id)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn approve_with_edits_from_the_page_at_desktop_and_phone_width_runs_the_edited_call() {
    let fixture = Fixture::start().await;
    let (desktop_call, desktop) = fixture
        .ask(
            "email.send",
            json!({"to": "bob@acme.test", "body": "the report"}),
        )
        .await;
    let (phone_call, phone) = fixture
        .ask(
            "email.send",
            json!({"to": "eve@acme.test", "body": "the plan"}),
        )
        .await;
    let input = json!({
        "desktop": {"id": desktop["id"], "to": "carol@acme.test"},
        "phone": {"id": phone["id"], "to": "dan@acme.test"},
    });
    Scenario::start("edit", &fixture.server, &fixture.approver, input)
        .finish()
        .await;

    for (call, approval, to, body) in [
        (&desktop_call, &desktop, "carol@acme.test", "the report"),
        (&phone_call, &phone, "dan@acme.test", "the plan"),
    ] {
        let decided = fixture.approval(approval["id"].as_str().unwrap()).await;
        assert_eq!(decided["status"], "approved", "{decided}");
        assert!(decided["edited_binding_digest"].is_string(), "{decided}");
        let path = format!("/v1/calls/{}", call["id"].as_str().unwrap());
        let stored = fixture
            .server
            .client
            .get(&path, &fixture.server.owner_token)
            .await
            .unwrap()
            .expect_status(200)
            .unwrap();
        assert_eq!(
            stored["arguments"],
            json!({"to": to, "body": body}),
            "{stored}"
        );
        assert_eq!(stored["original_arguments"], call["arguments"]);
    }
    // The same gate call as the API: each approval's record holds the change.
    let approved = fixture.audit("approval.approved").await;
    assert_eq!(approved.len(), 2, "{approved:?}");
    for record in &approved {
        assert_eq!(record["data"]["edit"]["changed"], json!(["to"]), "{record}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stale_page_is_told_live_and_its_click_is_refused_without_a_change() {
    let fixture = Fixture::start().await;
    let (_, mail) = fixture
        .ask("email.send", json!({"to": "bob@acme.test", "body": "hi"}))
        .await;
    let (_, edit) = fixture
        .ask(
            "fs.edit",
            json!({
                "path": "src/lib.rs",
                "old_string": "fn answer() -> u32 {\n    41\n}",
                "new_string": "fn answer() -> u32 {\n    42\n}\n// checked",
            }),
        )
        .await;
    let input = json!({
        "mail": {"id": mail["id"]},
        "edit": {
            "id": edit["id"],
            "summary": edit["preview"]["summary"],
            "binding_digest": edit["binding_digest"],
            "arguments": edit["preview"]["arguments"].to_string(),
            "rule": "edits-need-a-person",
            "removed": ["    41"],
            "added": ["    42", "// checked"],
        },
    });
    let mut browser = Scenario::start("stale", &fixture.server, &fixture.approver, input);
    browser.until("ready").await;
    let reason = "sent by the on-call";
    fixture
        .server
        .client
        .post(
            &format!("/v1/approvals/{}/decision", mail["id"].as_str().unwrap()),
            &fixture.server.owner_token,
            &json!({"decision": "approve", "binding_digest": mail["binding_digest"], "reason": reason}),
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let audit_before = fixture.audit("approval.rejected").await.len()
        + fixture.audit("approval.approved").await.len();
    browser
        .send(json!({"decided_by": "owner", "reason": reason}))
        .await;
    browser.finish().await;

    let mail = fixture.approval(mail["id"].as_str().unwrap()).await;
    assert_eq!(mail["status"], "approved");
    assert_eq!(mail["decision_reason"], reason);
    let edit = fixture.approval(edit["id"].as_str().unwrap()).await;
    assert_eq!(
        edit["status"], "pending",
        "a mismatched digest changes nothing"
    );
    let audit_after = fixture.audit("approval.rejected").await.len()
        + fixture.audit("approval.approved").await.len();
    assert_eq!(
        audit_after, audit_before,
        "refused clicks leave no decision"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_viewer_sees_no_decision_buttons_cannot_decide_and_sees_cards_leave_live() {
    let fixture = Fixture::start().await;
    let (_, approval) = fixture
        .ask("email.send", json!({"to": "bob@acme.test", "body": "hi"}))
        .await;
    let input =
        json!({"approval_id": approval["id"], "binding_digest": approval["binding_digest"]});
    let mut browser = Scenario::start("viewer", &fixture.server, &fixture.viewer, input);
    browser.until("watching").await;
    let id = approval["id"].as_str().unwrap();
    let now = fixture.approval(id).await;
    assert_eq!(
        now["status"], "pending",
        "the viewer's forged decision changed nothing"
    );
    fixture
        .server
        .client
        .post(
            &format!("/v1/approvals/{id}/decision"),
            &fixture.approver,
            &json!({"decision": "approve", "binding_digest": approval["binding_digest"]}),
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    browser.send(json!({})).await;
    browser.finish().await;
    assert_eq!(fixture.audit("approval.approved").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn sign_in_sign_out_and_forms_without_this_sessions_csrf_token_are_refused() {
    let fixture = Fixture::start().await;
    let (_, approval) = fixture
        .ask("email.send", json!({"to": "bob@acme.test", "body": "hi"}))
        .await;
    let input = json!({
        "approval_id": approval["id"],
        "binding_digest": approval["binding_digest"],
        "agent_token": fixture.agent_token,
    });
    Scenario::start("session", &fixture.server, &fixture.approver, input)
        .finish()
        .await;
    let approval = fixture.approval(approval["id"].as_str().unwrap()).await;
    assert_eq!(
        approval["status"], "pending",
        "refused forms change nothing"
    );
    assert_eq!(fixture.audit("web_session.created").await.len(), 1);
    assert_eq!(fixture.audit("web_session.ended").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn remember_revoke_and_every_other_page_from_a_run_waiting_on_a_person() {
    let fixture = Fixture::start().await;
    let (agent, session_id) = fixture.scripted_agent("writer").await;
    let message = "#email the report to Bob";
    let run = fixture
        .server
        .client
        .post(
            &format!("/v1/sessions/{session_id}/messages"),
            &agent,
            &json!({"text": message}),
        )
        .await
        .unwrap()
        .expect_status(202)
        .unwrap();
    let run_id = run["run_id"].as_str().unwrap();
    let approval = fixture.first_pending().await;
    let policy = fixture
        .server
        .client
        .get("/v1/policy", &fixture.server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let input = json!({
        "approval_id": approval["id"],
        "session_id": session_id,
        "message": message,
        "policy_digest": policy["digest"],
    });
    let mut browser = Scenario::start("tour", &fixture.server, &fixture.approver, input);
    browser.until("remembered").await;

    let finished = fixture.run_until_ended(run_id).await;
    assert_eq!(finished["state"], "completed", "{finished}");
    let rules = fixture.rules().await;
    assert_eq!(rules.len(), 1, "{rules:?}");
    let rule = &rules[0];
    assert_eq!(rule["tool"], "email.send");
    assert_eq!(rule["target"], "bob@example.com");
    assert_eq!(rule["scope"], "agent");
    assert_eq!(rule["created_by"], format!("user:{}", fixture.approver_id));
    let expires: jiff::Timestamp = rule["expires_at"].as_str().unwrap().parse().unwrap();
    let created: jiff::Timestamp = rule["created_at"].as_str().unwrap().parse().unwrap();
    assert_eq!(expires.as_second() - created.as_second(), 86_400, "{rule}");
    browser
        .send(json!({"rule_id": rule["id"], "reply": "Carrying on after the email step."}))
        .await;
    browser.finish().await;

    let rules = fixture.rules().await;
    assert!(rules[0]["revoked_at"].is_string(), "{rules:?}");
    let verified = fixture
        .server
        .client
        .get("/v1/audit/verify", &fixture.server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(verified["ok"], true, "{verified}");
}

/// The badge is the server's own walk of the chain: edit one record behind the server's
/// back and the page says where the chain breaks.
#[tokio::test(flavor = "multi_thread")]
async fn the_audit_page_shows_a_broken_chain_where_it_breaks() {
    let fixture = Fixture::start().await;
    let cookie = fixture.sign_in(&fixture.approver).await;
    let page = fixture.page("/audit", &cookie).await;
    assert!(page.contains("✓ chain verified"), "{page}");
    let records = fixture.audit("user.created").await;
    let seq = records[0]["seq"].as_u64().unwrap();
    assert_eq!(
        fixture
            .server
            .tamper_audit_data(seq, &json!({"name": "mallory"}))
            .await
            .unwrap(),
        1
    );
    let page = fixture.page("/audit", &cookie).await;
    assert!(!page.contains("chain verified"), "{page}");
    assert!(
        page.contains("✗ chain broken") && page.contains(&format!("at record #{seq}")),
        "{page}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_click_after_the_deadline_is_refused_as_expired() {
    let fixture = Fixture::start_manual().await;
    let (call, approval) = fixture
        .ask("email.send", json!({"to": "bob@acme.test", "body": "hi"}))
        .await;
    let input = json!({"approval_id": approval["id"]});
    let mut browser = Scenario::start("expired", &fixture.server, &fixture.approver, input);
    browser.until("ready").await;
    // The policy's deadline is one hour.
    fixture
        .server
        .advance(std::time::Duration::from_secs(3601))
        .unwrap();
    browser.send(json!({})).await;
    browser.finish().await;

    assert!(fixture.audit("approval.approved").await.is_empty());
    let call = fixture
        .server
        .client
        .get(
            &format!("/v1/calls/{}", call["id"].as_str().unwrap()),
            &fixture.agent_token,
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_ne!(call["status"], "approved", "{call}");
}

/// The policy page shows what a change would do over the last 7 days before it saves:
/// the preview saves nothing, the save after it does, and a text that does not load is
/// shown with its errors.
#[tokio::test(flavor = "multi_thread")]
async fn the_policy_page_shows_what_would_change_before_a_save() {
    let fixture = Fixture::start().await;
    let (call, _) = fixture
        .ask("email.send", json!({"to": "bob@acme.test", "body": "hi"}))
        .await;
    let candidate = support::POLICY.replace(
        "name = \"mail-needs-a-person\"\ntool = \"email.send\"\ndecision = \"ask\"",
        "name = \"mail-is-fine\"\ntool = \"email.send\"\ndecision = \"allow\"",
    );
    assert_ne!(candidate, support::POLICY);
    // An approver may decide, not change the policy: no edit form for them.
    let cookie = fixture.sign_in(&fixture.approver).await;
    let page = fixture.page("/policy", &cookie).await;
    assert!(!page.contains("policy-preview"), "{page}");

    let owner = fixture.server.owner_token.clone();
    let input = json!({
        "broken": "version = 1\ndefault = \"sometimes\"\n",
        "candidate": candidate,
        "call_id": call["id"],
    });
    let mut browser = Scenario::start("policy", &fixture.server, &owner, input);
    browser.until("previewed").await;
    let policy = fixture
        .server
        .client
        .get("/v1/policy", &owner)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(
        policy["version"], 2,
        "neither the broken text nor the preview saved: {policy}"
    );
    browser.send(json!({})).await;
    browser.until("saved").await;
    browser.finish().await;
    let policy = fixture
        .server
        .client
        .get("/v1/policy", &owner)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(policy["version"], 3, "{policy}");
    assert_eq!(policy["source"], candidate);
    let updated = fixture.audit("policy.updated").await;
    assert_eq!(
        updated.len(),
        3,
        "the starter's, the fixture's and the page's: {updated:?}"
    );
}

/// "Approve all of this turn" with one call opted out, at desktop and phone width: three
/// parallel calls of one model turn, two approved through the form, one still pending.
#[tokio::test(flavor = "multi_thread")]
async fn approve_all_of_a_turn_but_one_from_the_page() {
    let fixture = Fixture::start().await;
    let run_id = fixture.start_run("trio", "#three").await;
    let pending = fixture.pending(3).await;
    let ids: Vec<&str> = pending.iter().map(|a| a["id"].as_str().unwrap()).collect();
    let input = json!({"first": ids[0], "skip": ids[1], "ids": ids});
    Scenario::start("turn", &fixture.server, &fixture.approver, input)
        .finish()
        .await;

    for (id, status) in [
        (ids[0], "approved"),
        (ids[1], "pending"),
        (ids[2], "approved"),
    ] {
        let approval = fixture.approval(id).await;
        assert_eq!(approval["status"], status, "{approval}");
        if status == "approved" {
            assert_eq!(
                approval["decided_by"],
                format!("user:{}", fixture.approver_id)
            );
            assert_eq!(approval["decision_reason"], "the turn, but not that one");
        }
    }
    let run = fixture
        .server
        .client
        .get(&format!("/v1/runs/{run_id}"), &fixture.server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(run["state"], "awaiting_approval", "{run}");
    assert_eq!(fixture.audit("approval.approved").await.len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signed_in_person_following_a_link_from_another_site_lands_on_the_approval() {
    let fixture = Fixture::start().await;
    let (call, approval) = fixture
        .ask(
            "email.send",
            json!({"to": "bob@acme.test", "body": "from a mail"}),
        )
        .await;
    let waiter = fixture.wait_for(&call).await;
    Scenario::start(
        "crosssite",
        &fixture.server,
        &fixture.approver,
        json!({"id": approval["id"]}),
    )
    .finish()
    .await;

    let decided = waiter.await.unwrap();
    assert_eq!(decided["status"], "approved", "{decided}");
    let approval = fixture.approval(approval["id"].as_str().unwrap()).await;
    assert_eq!(
        approval["decided_by"],
        format!("user:{}", fixture.approver_id)
    );
}
