//! Calls for the SQLite committer's unit tests: an allowed call with its grant, as the gate
//! records it, and the workspace and agent it belongs to.

use crate::{Grant, NewCall};
use airlock_protocol::Call;
use jiff::Timestamp;

/// The tests' one instant.
pub(crate) fn at() -> Timestamp {
    Timestamp::from_second(1_800_000_000).expect("a valid instant")
}

/// An allowed call `call_{id}` of agent `agt_a` with its grant `grt_{id}`.
pub(crate) fn allowed_call(id: &str) -> NewCall {
    let call = Call {
        id: format!("call_{id}"),
        agent_id: "agt_a".into(),
        session_id: None,
        tool: "bench.op".into(),
        arguments: serde_json::json!({"n": id}),
        risk: airlock_protocol::Risk::Read,
        status: airlock_protocol::CallStatus::Allowed,
        decided_by: airlock_protocol::DecidedBy::Rule,
        rule: Some("allowed".into()),
        reason: None,
        approval_id: None,
        grant_id: Some(format!("grt_{id}")),
        created_at: at(),
        decided_at: Some(at()),
        native_tool: None,
        cwd: Some("/work".into()),
        project: None,
        redeemed_at: None,
        outcome: None,
        ambiguous_at: None,
        reconciliation: None,
        original_arguments: None,
    };
    NewCall {
        grant: Some(Grant {
            id: format!("grt_{id}"),
            call_id: call.id.clone(),
            created_at: at(),
            consumed_at: None,
        }),
        approval: None,
        call,
    }
}

/// Workspace `ws_a` and its agent `agt_a` in `store`.
pub(crate) async fn workspace_with_agent(store: &impl crate::Store) {
    store
        .create_workspace(&crate::Workspace {
            id: "ws_a".into(),
            name: "alpha".into(),
            created_at: at(),
        })
        .await
        .expect("workspace ws_a");
    store
        .create_agent(
            "ws_a",
            &agent("agt_a", "scout"),
            "hash",
            &crate::Effects::none(),
        )
        .await
        .expect("agent agt_a");
}

/// An agent `id` named `name`, in ask mode, with nothing else set.
pub(crate) fn agent(id: &str, name: &str) -> airlock_protocol::Agent {
    airlock_protocol::Agent {
        id: id.into(),
        name: name.into(),
        mode: airlock_protocol::Mode::Ask,
        system_prompt: None,
        tools: None,
        workspace_dir: None,
        llm: None,
        mcp_servers: None,
        created_at: at(),
    }
}
