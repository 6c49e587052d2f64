//! Every event kind serialises to exactly the JSON its `json!()` producer wrote before the
//! kinds were typed. The expected text of each kind was written by hand from the old
//! producer (field names, order, `null` against absent); a kind whose data is a record
//! (an approval, a call, a task…) is that record's own JSON.
//!
//! Two checks per kind: the data struct's own bytes equal the expected text (the field
//! order the producers used, which is what is stored when `serde_json` keeps insertion
//! order), and the stored `data` value serialises like the expected text parsed in the same
//! build (what is stored either way). Reading it back gives the same kind and bytes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use airlock_protocol::events::*;
use airlock_protocol::{
    Approval, ApprovalStatus, Call, CallStatus, DecidedBy, Mode, OutcomeStatus, Preview,
    Resolution, Risk, Role, RuleScope, RunState, StepStatus,
};
use jiff::Timestamp;
use serde_json::{json, Value};

fn at() -> Timestamp {
    "2026-01-02T03:04:05Z".parse().unwrap()
}

fn text(value: &Value) -> String {
    serde_json::to_string(value).unwrap()
}

/// Checks one kind: `$enum::$variant($data)` is `$kind` and serialises to `$expected`.
macro_rules! check {
    ($enum:ident :: $variant:ident ($data:expr), $kind:literal, $expected:expr) => {{
        let data = $data;
        let expected: &str = $expected;
        assert_eq!(
            serde_json::to_string(&data).unwrap(),
            expected,
            "{}: struct bytes",
            $kind
        );
        let event = $enum::$variant(data);
        assert_eq!(event.kind(), $kind);
        let stored = event.data();
        let parsed: Value = serde_json::from_str(expected).unwrap();
        assert_eq!(text(&stored), text(&parsed), "{}: stored data", $kind);
        // The text the gate canonicalizes is the struct's own bytes.
        assert_eq!(
            String::from_utf8(event.data_json()).unwrap(),
            expected,
            "{}: data as JSON text",
            $kind
        );
        let back = $enum::from_parts($kind, stored).unwrap();
        assert_eq!(back.kind(), $kind);
        assert_eq!(text(&back.data()), text(&parsed), "{}: read back", $kind);
        // The tagged form is the records' `{kind, data}`.
        let tagged = serde_json::to_value(&event).unwrap();
        assert_eq!(tagged["kind"], $kind);
        assert_eq!(text(&tagged["data"]), text(&parsed));
        event
    }};
}

fn call() -> Call {
    serde_json::from_value(json!({
        "id": "call_1", "agent_id": "agt_1", "session_id": "ses_1", "tool": "shell.exec",
        "arguments": {"command": "ls"}, "risk": "exec", "status": "allowed",
        "decided_by": "rule", "rule": "ls", "reason": "listing", "approval_id": null,
        "grant_id": "grt_1", "created_at": "2026-01-02T03:04:05Z", "decided_at": null,
    }))
    .unwrap()
}

fn approval() -> Approval {
    serde_json::from_value(json!({
        "id": "apr_1", "call_id": "call_1", "agent_id": "agt_1", "session_id": null,
        "status": "approved", "tool": "email.send", "risk": "external",
        "preview": {"summary": "mail b", "arguments": {"to": "b@x.test"}},
        "rule": "mail", "reason": "outside", "binding_digest": "bd", "policy_digest": "pd",
        "standing_target": "b@x.test", "deadline": "2026-01-02T04:04:05Z",
        "created_at": "2026-01-02T03:04:05Z", "decided_at": "2026-01-02T03:05:05Z",
        "decided_by": "user:usr_1", "decision_reason": null,
    }))
    .unwrap()
}

const CALL_AUDIT: &str = r#"{"call_id":"call_1","agent_id":"agt_1","session_id":"ses_1","tool":"shell.exec","arguments":{"command":"ls"},"risk":"exec","outcome":"allowed","decided_by":"rule","rule":"ls","standing_rule":null,"reason":"listing","grant_id":"grt_1"}"#;

const APPROVAL_AUDIT: &str = r#"{"approval_id":"apr_1","call_id":"call_1","tool":"email.send","status":"approved","decided_by":"user:usr_1","reason":null,"binding_digest":"bd","policy_digest":"pd"}"#;

#[test]
fn run_journal_kinds_keep_their_json() {
    check!(
        RunEventData::RunStarted(RunStarted {
            run_id: "run_1".into(),
            session_id: "ses_1".into(),
            agent_id: "agt_1".into(),
            task_id: None,
            text: "hi".into(),
        }),
        "run_started",
        r#"{"run_id":"run_1","session_id":"ses_1","agent_id":"agt_1","text":"hi"}"#
    );
    check!(
        RunEventData::RunStarted(RunStarted {
            run_id: "run_1".into(),
            session_id: "ses_1".into(),
            agent_id: "agt_1".into(),
            task_id: Some("tsk_1".into()),
            text: "do it".into(),
        }),
        "run_started",
        r#"{"run_id":"run_1","session_id":"ses_1","agent_id":"agt_1","task_id":"tsk_1","text":"do it"}"#
    );
    check!(
        RunEventData::TextDelta(TextDelta { text: "Hel".into() }),
        "text_delta",
        r#"{"text":"Hel"}"#
    );
    check!(
        RunEventData::ToolCall(ToolCallMade {
            step: 0,
            tool_call_id: "tc_1".into(),
            tool: "fs.read".into(),
            arguments: json!({"path": "a.txt"}),
        }),
        "tool_call",
        r#"{"step":0,"tool_call_id":"tc_1","tool":"fs.read","arguments":{"path":"a.txt"}}"#
    );
    check!(
        RunEventData::ToolDecided(ToolDecided {
            step: 1,
            call_id: "call_1".into(),
            status: CallStatus::Pending,
            decided_by: DecidedBy::PolicyDefault,
            rule: None,
            reason: Some("asked".into()),
        }),
        "tool_decided",
        r#"{"step":1,"call_id":"call_1","status":"pending","decided_by":"policy_default","rule":null,"reason":"asked"}"#
    );
    check!(
        RunEventData::ApprovalRequired(ApprovalRequired {
            step: 1,
            call_id: "call_1".into(),
            approval_id: "apr_1".into(),
            tool: "email.send".into(),
            risk: Risk::External,
            preview: Preview {
                summary: "mail b".into(),
                body: None,
                arguments: json!({"to": "b@x.test"}),
            },
            rule: Some("mail".into()),
            reason: None,
            deadline: at(),
            binding_digest: "bd".into(),
            standing_target: None,
        }),
        "approval_required",
        r#"{"step":1,"call_id":"call_1","approval_id":"apr_1","tool":"email.send","risk":"external","preview":{"summary":"mail b","arguments":{"to":"b@x.test"}},"rule":"mail","reason":null,"deadline":"2026-01-02T03:04:05Z","binding_digest":"bd","standing_target":null}"#
    );
    check!(
        RunEventData::RunSuspended(RunSuspended {
            waiting_for: vec!["apr_1".into(), "apr_2".into()],
        }),
        "run_suspended",
        r#"{"waiting_for":["apr_1","apr_2"]}"#
    );
    check!(
        RunEventData::RunResumed(RunResumed {
            node: "node-a".into()
        }),
        "run_resumed",
        r#"{"node":"node-a"}"#
    );
    for (kind, event) in [
        (
            "run_paused",
            RunEventData::RunPaused(RunActor {
                by: "user:u".into(),
            }),
        ),
        (
            "run_unpaused",
            RunEventData::RunUnpaused(RunActor {
                by: "user:u".into(),
            }),
        ),
        (
            "run_cancelled",
            RunEventData::RunCancelled(RunActor {
                by: "user:u".into(),
            }),
        ),
    ] {
        assert_eq!(event.kind(), kind);
        assert_eq!(text(&event.data()), r#"{"by":"user:u"}"#);
        assert_eq!(RunEventData::from_parts(kind, event.data()).unwrap(), event);
    }
    check!(
        RunEventData::ToolStarted(ToolStarted {
            step: 2,
            call_id: "call_1".into(),
            tool: "fs.write".into(),
        }),
        "tool_started",
        r#"{"step":2,"call_id":"call_1","tool":"fs.write"}"#
    );
    check!(
        RunEventData::ToolFinished(ToolFinished {
            step: 2,
            call_id: None,
            tool: "fs.write".into(),
            status: StepStatus::Error,
            output: json!({"error": "no"}),
            rule: None,
            standing_rule: Some("sr_1".into()),
            approver: Some("user:u".into()),
        }),
        "tool_finished",
        r#"{"step":2,"call_id":null,"tool":"fs.write","status":"error","output":{"error":"no"},"rule":null,"standing_rule":"sr_1","approver":"user:u"}"#
    );
    check!(
        RunEventData::StepFinished(StepFinished { turn: 3 }),
        "step_finished",
        r#"{"turn":3}"#
    );
    let completed = check!(
        RunEventData::RunCompleted(RunCompleted { text: None }),
        "run_completed",
        r#"{"text":null}"#
    );
    assert!(completed.is_terminal());
    let failed = check!(
        RunEventData::RunFailed(RunFailed {
            error: "the model failed".into()
        }),
        "run_failed",
        r#"{"error":"the model failed"}"#
    );
    assert!(failed.is_terminal());
    assert!(RunEventData::RunCancelled(RunActor {
        by: "system".into()
    })
    .is_terminal());
    assert!(!RunEventData::TextDelta(TextDelta {
        text: String::new()
    })
    .is_terminal());
}

#[test]
fn workspace_kinds_keep_their_json() {
    // The kinds that carry a record carry exactly the record's JSON.
    let approval = approval();
    let record = serde_json::to_value(&approval).unwrap();
    for event in [
        WorkspaceEventData::ApprovalRequested(approval.clone()),
        WorkspaceEventData::ApprovalDecided(approval.clone()),
        WorkspaceEventData::ApprovalVoted(approval.clone()),
        WorkspaceEventData::ApprovalExpired(approval.clone()),
        WorkspaceEventData::ApprovalCancelled(approval.clone()),
    ] {
        assert_eq!(text(&event.data()), text(&record));
        let back = WorkspaceEventData::from_parts(event.kind(), event.data()).unwrap();
        assert_eq!(back, event);
    }
    let call = call();
    let record = serde_json::to_value(&call).unwrap();
    for event in [
        WorkspaceEventData::CallDecided(call.clone()),
        WorkspaceEventData::CallAmbiguous(call.clone()),
    ] {
        assert_eq!(text(&event.data()), text(&record));
        assert_eq!(
            WorkspaceEventData::from_parts(event.kind(), event.data()).unwrap(),
            event
        );
    }

    check!(
        WorkspaceEventData::CallOutcome(CallOutcomeEvent {
            call_id: "call_1".into(),
            status: OutcomeStatus::Failed,
        }),
        "call.outcome",
        r#"{"call_id":"call_1","status":"failed"}"#
    );
    check!(
        WorkspaceEventData::CallReconciled(CallReconciledEvent {
            call_id: "call_1".into(),
            resolution: Resolution::DidNotRun,
        }),
        "call.reconciled",
        r#"{"call_id":"call_1","resolution":"did_not_run"}"#
    );
    check!(
        WorkspaceEventData::RuleRevoked(RuleRevoked { id: "sr_1".into() }),
        "rule.revoked",
        r#"{"id":"sr_1"}"#
    );
    check!(
        WorkspaceEventData::PolicyUpdated(PolicyUpdatedEvent {
            version: 4,
            digest: "pd".into(),
        }),
        "policy.updated",
        r#"{"version":4,"digest":"pd"}"#
    );
    check!(
        WorkspaceEventData::AgentUpdated(AgentUpdated {
            id: "agt_1".into(),
            name: "bot".into(),
            mode: Mode::ReadOnly,
        }),
        "agent.updated",
        r#"{"id":"agt_1","name":"bot","mode":"read_only"}"#
    );
    check!(
        WorkspaceEventData::TokenRevoked(TokenRevoked {
            subject_id: "agt_1".into()
        }),
        "token.revoked",
        r#"{"subject_id":"agt_1"}"#
    );
    check!(
        WorkspaceEventData::RunState(RunStateChanged {
            run_id: "run_1".into(),
            session_id: "ses_1".into(),
            agent_id: "agt_1".into(),
            state: RunState::AwaitingApproval,
            by: "system".into(),
        }),
        "run.state",
        r#"{"run_id":"run_1","session_id":"ses_1","agent_id":"agt_1","state":"awaiting_approval","by":"system"}"#
    );
}

#[test]
fn audit_kinds_keep_their_json() {
    let call = call();
    check!(
        AuditEvent::CallAllowed(CallAudit::of(&call, None, None)),
        "call.allowed",
        CALL_AUDIT
    );
    // Where the call came from, and its task, follow the old fields when present.
    let mut hooked = call.clone();
    hooked.status = CallStatus::Denied;
    hooked.native_tool = Some("Bash".into());
    hooked.project = Some("/p".into());
    check!(
        AuditEvent::CallDenied(CallAudit::of(&hooked, Some("sr_1"), Some("tsk_1"))),
        "call.denied",
        r#"{"call_id":"call_1","agent_id":"agt_1","session_id":"ses_1","tool":"shell.exec","arguments":{"command":"ls"},"risk":"exec","outcome":"denied","decided_by":"rule","rule":"ls","standing_rule":"sr_1","reason":"listing","grant_id":"grt_1","native_tool":"Bash","project":"/p","task_id":"tsk_1"}"#
    );
    check!(
        AuditEvent::ApprovalRequested(ApprovalRequestedAudit {
            call: CallAudit::of(&call, None, None),
            approval_id: "apr_1".into(),
            deadline: at().to_string(),
            binding_digest: "bd".into(),
        }),
        "approval.requested",
        &format!(
            r#"{},"approval_id":"apr_1","deadline":"2026-01-02T03:04:05Z","binding_digest":"bd"}}"#,
            CALL_AUDIT.trim_end_matches('}')
        )
    );
    let approval = approval();
    check!(
        AuditEvent::ApprovalExpired(ApprovalAudit::of(&approval)),
        "approval.expired",
        APPROVAL_AUDIT
    );
    let mut edited = approval.clone();
    edited.status = ApprovalStatus::Cancelled;
    edited.edited_binding_digest = Some("ed".into());
    check!(
        AuditEvent::ApprovalCancelled(ApprovalAudit::of(&edited)),
        "approval.cancelled",
        r#"{"approval_id":"apr_1","call_id":"call_1","tool":"email.send","status":"cancelled","decided_by":"user:usr_1","reason":null,"binding_digest":"bd","policy_digest":"pd","edited_binding_digest":"ed"}"#
    );
    check!(
        AuditEvent::ApprovalApproved(ApprovalDecidedAudit {
            approval: ApprovalAudit::of(&approval),
            grant_id: Some("grt_1".into()),
            edit: Some(json!({"changed": ["to"]})),
        }),
        "approval.approved",
        &format!(
            r#"{},"grant_id":"grt_1","edit":{{"changed":["to"]}}}}"#,
            APPROVAL_AUDIT.trim_end_matches('}')
        )
    );
    let mut rejected = approval.clone();
    rejected.status = ApprovalStatus::Rejected;
    check!(
        AuditEvent::ApprovalRejected(ApprovalDecidedAudit {
            approval: ApprovalAudit::of(&rejected),
            grant_id: None,
            edit: None,
        }),
        "approval.rejected",
        &APPROVAL_AUDIT.replace("approved", "rejected")
    );
    check!(
        AuditEvent::ApprovalVoted(VoteAudit {
            approval: ApprovalAudit::of(&approval),
            vote: "reject".into(),
            approvals_required: 2,
        }),
        "approval.voted",
        &format!(
            r#"{},"vote":"reject","approvals_required":2}}"#,
            APPROVAL_AUDIT.trim_end_matches('}')
        )
    );
    check!(
        AuditEvent::GrantConsumed(GrantConsumedAudit {
            call_id: "call_1".into(),
            tool: "fs.write".into(),
        }),
        "grant.consumed",
        r#"{"call_id":"call_1","tool":"fs.write"}"#
    );
    check!(
        AuditEvent::CallAdopted(CallAdoptedAudit {
            call_id: "call_1".into(),
            approval_id: None,
            session_id: Some("ses_1".into()),
            tool: "shell.exec".into(),
            outcome: CallStatus::Approved,
            escalation: false,
        }),
        "call.adopted",
        r#"{"call_id":"call_1","approval_id":null,"session_id":"ses_1","tool":"shell.exec","outcome":"approved"}"#
    );
    check!(
        AuditEvent::CallAdopted(CallAdoptedAudit {
            call_id: "call_2".into(),
            approval_id: None,
            session_id: None,
            tool: "shell.exec".into(),
            outcome: CallStatus::Allowed,
            escalation: true,
        }),
        "call.adopted",
        r#"{"call_id":"call_2","approval_id":null,"session_id":null,"tool":"shell.exec","outcome":"allowed","escalation":true}"#
    );
    check!(
        AuditEvent::CallOutcome(CallOutcomeAudit {
            call_id: "call_1".into(),
            status: OutcomeStatus::Succeeded,
            detail: None,
        }),
        "call.outcome",
        r#"{"call_id":"call_1","status":"succeeded","detail":null}"#
    );
    check!(
        AuditEvent::CallAmbiguous(CallAmbiguousAudit {
            call_id: "call_1".into(),
            agent_id: "agt_1".into(),
            tool: "shell.exec".into(),
            redeemed_at: Some(at()),
        }),
        "call.ambiguous",
        r#"{"call_id":"call_1","agent_id":"agt_1","tool":"shell.exec","redeemed_at":"2026-01-02T03:04:05Z"}"#
    );
    check!(
        AuditEvent::CallReconciled(CallReconciledAudit {
            call_id: "call_1".into(),
            resolution: Resolution::Ran,
            reason: None,
        }),
        "call.reconciled",
        r#"{"call_id":"call_1","resolution":"ran","reason":null}"#
    );
    check!(
        AuditEvent::PolicyUpdated(PolicyUpdatedAudit {
            version: 2,
            digest: "pd2".into(),
            previous_digest: None,
        }),
        "policy.updated",
        r#"{"version":2,"digest":"pd2","previous_digest":null}"#
    );
    // A standing rule from an approval, made directly, and made with a task.
    check!(
        AuditEvent::RuleCreated(RuleCreatedAudit {
            tool: "fs.write".into(),
            target: "/p".into(),
            scope: RuleScope::Session,
            scope_id: "ses_1".into(),
            expires_at: Some(None),
            from_approval: Some("apr_1".into()),
        }),
        "rule.created",
        r#"{"tool":"fs.write","target":"/p","scope":"session","scope_id":"ses_1","expires_at":null,"from_approval":"apr_1"}"#
    );
    check!(
        AuditEvent::RuleCreated(RuleCreatedAudit {
            tool: "fs.write".into(),
            target: "/p".into(),
            scope: RuleScope::Agent,
            scope_id: "agt_1".into(),
            expires_at: Some(Some(at().to_string())),
            from_approval: None,
        }),
        "rule.created",
        r#"{"tool":"fs.write","target":"/p","scope":"agent","scope_id":"agt_1","expires_at":"2026-01-02T03:04:05Z"}"#
    );
    check!(
        AuditEvent::RuleCreated(RuleCreatedAudit {
            tool: "fs.write".into(),
            target: "/p".into(),
            scope: RuleScope::Task,
            scope_id: "tsk_1".into(),
            expires_at: None,
            from_approval: None,
        }),
        "rule.created",
        r#"{"tool":"fs.write","target":"/p","scope":"task","scope_id":"tsk_1"}"#
    );
    check!(
        AuditEvent::RuleRevoked(RuleRevokedAudit {
            rule_id: "sr_1".into()
        }),
        "rule.revoked",
        r#"{"rule_id":"sr_1"}"#
    );
    check!(
        AuditEvent::UserCreated(UserCreatedAudit {
            name: "ann".into(),
            role: Role::Owner,
            bootstrap: true,
        }),
        "user.created",
        r#"{"name":"ann","role":"owner","bootstrap":true}"#
    );
    check!(
        AuditEvent::UserCreated(UserCreatedAudit {
            name: "bo".into(),
            role: Role::Approver,
            bootstrap: false,
        }),
        "user.created",
        r#"{"name":"bo","role":"approver"}"#
    );
    for kind in ["agent.created", "agent.updated"] {
        let data = AgentAudit {
            name: "bot".into(),
            mode: Mode::Unattended,
        };
        assert_eq!(
            serde_json::to_string(&data).unwrap(),
            r#"{"name":"bot","mode":"unattended"}"#
        );
        let event = AuditEvent::from_parts(kind, serde_json::to_value(&data).unwrap()).unwrap();
        assert_eq!(event.kind(), kind);
    }
    check!(
        AuditEvent::TokenRevoked(SubjectAudit {
            subject_id: "usr_2".into()
        }),
        "token.revoked",
        r#"{"subject_id":"usr_2"}"#
    );
    check!(
        AuditEvent::SessionUpdated(SessionUpdatedAudit {
            agent_id: Some("agt_1".into()),
            mode: None,
        }),
        "session.updated",
        r#"{"agent_id":"agt_1","mode":null}"#
    );
    check!(
        AuditEvent::WebSessionCreated(WebSessionCreatedAudit {
            user_id: "usr_1".into(),
            expires_at: at().to_string(),
            via: None,
            approval_id: None,
            link: None,
        }),
        "web_session.created",
        r#"{"user_id":"usr_1","expires_at":"2026-01-02T03:04:05Z"}"#
    );
    check!(
        AuditEvent::WebSessionCreated(WebSessionCreatedAudit {
            user_id: "usr_1".into(),
            expires_at: at().to_string(),
            via: Some("link".into()),
            approval_id: Some("apr_1".into()),
            link: Some("nonce".into()),
        }),
        "web_session.created",
        r#"{"user_id":"usr_1","expires_at":"2026-01-02T03:04:05Z","via":"link","approval_id":"apr_1","link":"nonce"}"#
    );
    check!(
        AuditEvent::WebSessionEnded(WebSessionEndedAudit {
            reason: "signed out".into()
        }),
        "web_session.ended",
        r#"{"reason":"signed out"}"#
    );
    check!(
        AuditEvent::TaskCreated(TaskCreatedAudit {
            title: "daily".into(),
            agent_id: "agt_1".into(),
            cron: "0 9 * * *".into(),
            timezone: "UTC".into(),
            enabled: true,
        }),
        "task.created",
        r#"{"title":"daily","agent_id":"agt_1","cron":"0 9 * * *","timezone":"UTC","enabled":true}"#
    );
    for kind in ["task.updated", "task.revoked"] {
        let data = TaskUpdatedAudit {
            title: "daily".into(),
            cron: "0 9 * * *".into(),
            timezone: "UTC".into(),
            enabled: false,
        };
        let expected = r#"{"title":"daily","cron":"0 9 * * *","timezone":"UTC","enabled":false}"#;
        assert_eq!(serde_json::to_string(&data).unwrap(), expected);
        let event = AuditEvent::from_parts(kind, serde_json::to_value(&data).unwrap()).unwrap();
        assert_eq!(event.kind(), kind);
        assert_eq!(
            text(&event.data()),
            text(&serde_json::from_str(expected).unwrap())
        );
    }
    for kind in ["run.paused", "run.resumed"] {
        let event = AuditEvent::from_parts(kind, json!({"run_id": "run_1"})).unwrap();
        assert_eq!(event.kind(), kind);
        assert_eq!(text(&event.data()), r#"{"run_id":"run_1"}"#);
    }
}

#[test]
fn every_kind_is_listed_once() {
    for kinds in [
        RunEventData::KINDS,
        WorkspaceEventData::KINDS,
        AuditEvent::KINDS,
    ] {
        let mut sorted = kinds.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), kinds.len());
    }
    // DESIGN.md §6.4's kinds are all there.
    for kind in [
        "run_started",
        "text_delta",
        "tool_call",
        "tool_decided",
        "approval_required",
        "run_suspended",
        "run_resumed",
        "tool_started",
        "tool_finished",
        "step_finished",
        "run_completed",
        "run_failed",
        "run_cancelled",
    ] {
        assert!(RunEventData::KINDS.contains(&kind), "{kind}");
    }
    for kind in [
        "approval.requested",
        "approval.decided",
        "approval.expired",
        "approval.cancelled",
        "call.decided",
        "run.state",
        "rule.created",
        "rule.revoked",
        "policy.updated",
    ] {
        assert!(WorkspaceEventData::KINDS.contains(&kind), "{kind}");
    }
}

#[test]
fn unknown_kinds_and_other_shapes_are_errors_not_guesses() {
    match RunEventData::from_parts("run_exploded", json!({})) {
        Err(EventError::UnknownKind(kind)) => assert_eq!(kind, "run_exploded"),
        other => panic!("expected an unknown kind, got {other:?}"),
    }
    match AuditEvent::from_parts("grant.consumed", json!({"call_id": 1})) {
        Err(EventError::Data { kind, .. }) => assert_eq!(kind, "grant.consumed"),
        other => panic!("expected a data error, got {other:?}"),
    }
    let error = WorkspaceEventData::from_parts("nope", Value::Null).unwrap_err();
    assert_eq!(error.to_string(), "unknown event kind `nope`");
}

/// The kinds without their data (what readers match on) are the same kinds, spelled the
/// same: each stored kind parses to the variant that gives it back, and a kind this build
/// does not know parses to nothing rather than to a near match.
#[test]
fn the_kinds_without_data_read_every_stored_kind_back() {
    for kind in RunEventData::KINDS {
        assert_eq!(RunKind::parse(kind).map(RunKind::as_str), Some(*kind));
    }
    for kind in WorkspaceEventData::KINDS {
        assert_eq!(
            WorkspaceKind::parse(kind).map(WorkspaceKind::as_str),
            Some(*kind)
        );
    }
    for kind in AuditEvent::KINDS {
        assert_eq!(AuditKind::parse(kind).map(AuditKind::as_str), Some(*kind));
    }
    for unknown in [
        "",
        "run_exploded",
        "approval.",
        "APPROVAL.REQUESTED",
        "call.decided ",
    ] {
        assert_eq!(RunKind::parse(unknown), None);
        assert_eq!(WorkspaceKind::parse(unknown), None);
        assert_eq!(AuditKind::parse(unknown), None);
    }
    // The same text can be a kind of two streams, and each reads it as its own.
    assert_eq!(
        WorkspaceKind::parse("approval.requested"),
        Some(WorkspaceKind::ApprovalRequested)
    );
    assert_eq!(
        AuditKind::parse("approval.requested"),
        Some(AuditKind::ApprovalRequested)
    );
    assert_eq!(WorkspaceKind::parse("approval.approved"), None);
}
