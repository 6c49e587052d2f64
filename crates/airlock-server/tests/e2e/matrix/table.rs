//! The matrix's table: one row per route, one column per kind of caller, the expected
//! answer in each cell (see the parent module for how a cell runs).

use super::Cell;
use crate::support::POLICY;
use reqwest::Method;
use serde_json::{json, Value};

/// The columns, in table order.
pub(super) const COLUMNS: [&str; 9] = [
    "owner",
    "admin",
    "approver",
    "viewer",
    "agent",
    "other_owner",
    "other_agent",
    "none",
    "bad",
];

/// What a cell's request carries as its body.
#[derive(Clone, Copy)]
pub(super) enum Body {
    Empty,
    Json(fn(&Cell) -> Value),
    Toml(&'static str),
    /// A form; signed-in cells add their `csrf` field.
    Form(fn(&Cell) -> Vec<(&'static str, String)>),
    /// The sign-in form with the column's own token.
    Login,
}

/// One endpoint: method, path (placeholders filled per cell), body, whether it is a
/// page (cookie auth) and whether a 200 is a stream (not read to the end).
pub(super) struct Row {
    pub(super) method: Method,
    pub(super) path: &'static str,
    pub(super) body: Body,
    pub(super) page: bool,
    pub(super) stream: bool,
    pub(super) expect: [&'static str; 9],
}

fn api(method: Method, path: &'static str, body: Body, expect: [&'static str; 9]) -> Row {
    Row {
        method,
        path,
        body,
        page: false,
        stream: false,
        expect,
    }
}

fn page(method: Method, path: &'static str, body: Body, expect: [&'static str; 9]) -> Row {
    Row {
        method,
        path,
        body,
        page: true,
        stream: false,
        expect,
    }
}

fn streamed(row: Row) -> Row {
    Row {
        stream: true,
        ..row
    }
}

/// Users (any role) read, nobody else in the workspace; another workspace's owner reads
/// its own (empty) collection.
const READ_LIST: [&str; 9] = [
    "200", "200", "200", "200", "403", "200", "403", "401", "401",
];
/// An object of this workspace that users and its own agent may read.
const READ_OWN: [&str; 9] = [
    "200", "200", "200", "200", "200", "404", "404", "401", "401",
];
/// An object only users may read.
const READ_USERS: [&str; 9] = [
    "200", "200", "200", "200", "403", "404", "403", "401", "401",
];
/// A change only approvers and up may make (agents refused before any lookup).
const APPROVER_CHANGE: [&str; 9] = [
    "200", "200", "200", "403", "403", "404", "403", "401", "401",
];
/// A signed-in page: users read; agents and strangers are sent to sign in.
const PAGE_LIST: [&str; 9] = [
    "200", "200", "200", "200", "303", "200", "303", "303", "303",
];
const PAGE_OBJECT: [&str; 9] = [
    "200", "200", "200", "200", "303", "404", "303", "303", "303",
];
const PAGE_APPROVER_POST: [&str; 9] = [
    "303", "303", "303", "403", "303", "404", "303", "303", "303",
];
const OPEN: [&str; 9] = ["200"; 9];

pub(super) fn rows() -> Vec<Row> {
    use Method as M;
    vec![
        api(M::GET, "/healthz", Body::Empty, OPEN),
        api(M::GET, "/metrics", Body::Empty, OPEN),
        api(M::GET, "/openapi.json", Body::Empty, OPEN),
        api(
            M::POST,
            "/v1/users",
            Body::Json(|c| json!({"name": c.unique, "role": "viewer"})),
            [
                "201", "201", "403", "403", "403", "201", "403", "401", "401",
            ],
        ),
        api(M::GET, "/v1/users", Body::Empty, READ_LIST),
        api(
            M::POST,
            "/v1/agents",
            Body::Json(|c| json!({"name": c.unique})),
            [
                "201", "201", "403", "403", "403", "201", "403", "401", "401",
            ],
        ),
        api(M::GET, "/v1/agents", Body::Empty, READ_LIST),
        api(
            M::GET,
            "/v1/agents/me",
            Body::Empty,
            [
                "403", "403", "403", "403", "200", "403", "200", "401", "401",
            ],
        ),
        api(
            M::GET,
            "/v1/agents/{agent}",
            Body::Empty,
            [
                "200", "200", "200", "200", "200", "404", "403", "401", "401",
            ],
        ),
        api(
            M::PATCH,
            "/v1/agents/{agent}",
            Body::Json(|_| json!({"mode": "ask"})),
            [
                "200", "200", "403", "403", "403", "404", "403", "401", "401",
            ],
        ),
        api(
            M::POST,
            "/v1/sessions",
            Body::Json(|c| json!({"agent_id": c.agent, "title": "matrix"})),
            [
                "201", "201", "201", "403", "201", "404", "403", "401", "401",
            ],
        ),
        api(M::GET, "/v1/sessions/{session}", Body::Empty, READ_OWN),
        api(
            M::PATCH,
            "/v1/sessions/{session}",
            Body::Json(|_| json!({"mode": "read_only"})),
            [
                "200", "200", "403", "403", "403", "404", "403", "401", "401",
            ],
        ),
        api(M::GET, "/v1/policy", Body::Empty, READ_LIST),
        api(
            M::PUT,
            "/v1/policy",
            Body::Toml(POLICY),
            [
                "200", "200", "403", "403", "403", "200", "403", "401", "401",
            ],
        ),
        // A dry run saves nothing, but only those who may save may ask for one.
        api(
            M::PUT,
            "/v1/policy?dry_run=true",
            Body::Toml(POLICY),
            [
                "200", "200", "403", "403", "403", "200", "403", "401", "401",
            ],
        ),
        api(
            M::POST,
            "/v1/policy/evaluate",
            Body::Json(|_| json!({"tool": "fs.read", "arguments": {"path": "a"}})),
            READ_LIST,
        ),
        api(
            M::POST,
            "/v1/calls",
            Body::Json(|_| json!({"tool": "fs.read", "arguments": {"path": "a"}})),
            [
                "403", "403", "403", "403", "201", "403", "201", "401", "401",
            ],
        ),
        api(M::GET, "/v1/calls/{pending_call}", Body::Empty, READ_OWN),
        api(
            M::POST,
            "/v1/calls/{allowed_call}/redeem",
            Body::Empty,
            [
                "403", "403", "403", "403", "200", "403", "404", "401", "401",
            ],
        ),
        // An outcome is the call's agent's to report; a person's token is refused before
        // any lookup (DESIGN.md §11.8).
        api(
            M::POST,
            "/v1/calls/{redeemed_call}/outcome",
            Body::Json(|_| json!({"status": "succeeded"})),
            [
                "403", "403", "403", "403", "200", "403", "404", "401", "401",
            ],
        ),
        api(M::GET, "/v1/calls/ambiguous", Body::Empty, READ_LIST),
        // Reconciling needs an approver; a call that is not ambiguous is then a conflict.
        api(
            M::POST,
            "/v1/calls/{allowed_call}/reconcile",
            Body::Json(|_| json!({"resolution": "did_not_run"})),
            [
                "409", "409", "409", "403", "403", "404", "403", "401", "401",
            ],
        ),
        api(
            M::POST,
            "/v1/calls/{pending_call}/cancel",
            Body::Empty,
            [
                "200", "200", "200", "403", "200", "404", "404", "401", "401",
            ],
        ),
        api(
            M::POST,
            "/v1/sessions/{session}/messages",
            Body::Json(|_| json!({"text": "#time"})),
            [
                "202", "202", "202", "403", "202", "404", "404", "401", "401",
            ],
        ),
        api(
            M::GET,
            "/v1/sessions/{session}/messages",
            Body::Empty,
            READ_OWN,
        ),
        api(M::GET, "/v1/runs/{run}", Body::Empty, READ_OWN),
        streamed(api(M::GET, "/v1/runs/{run}/events", Body::Empty, READ_OWN)),
        api(
            M::POST,
            "/v1/runs/{run}/cancel",
            Body::Empty,
            [
                "200", "200", "200", "403", "200", "404", "404", "401", "401",
            ],
        ),
        api(
            M::POST,
            "/v1/runs/{run}/pause",
            Body::Empty,
            [
                "200", "200", "200", "403", "200", "404", "404", "401", "401",
            ],
        ),
        // The cell's run is suspended, not paused: the role check comes first (403), then
        // the run's state (409).
        api(
            M::POST,
            "/v1/runs/{run}/resume",
            Body::Empty,
            [
                "409", "409", "409", "403", "409", "404", "404", "401", "401",
            ],
        ),
        api(M::GET, "/v1/outbox", Body::Empty, READ_LIST),
        api(
            M::POST,
            "/v1/tasks",
            Body::Json(
                |c| json!({"title": c.unique, "instructions": "#time", "agent": "scout", "cron": "0 3 * * *"}),
            ),
            [
                "201", "201", "201", "403", "201", "404", "404", "401", "401",
            ],
        ),
        api(M::GET, "/v1/tasks", Body::Empty, READ_LIST),
        api(M::GET, "/v1/tasks/{task}", Body::Empty, READ_USERS),
        api(
            M::PATCH,
            "/v1/tasks/{task}",
            Body::Json(|_| json!({"title": "renamed"})),
            APPROVER_CHANGE,
        ),
        api(
            M::POST,
            "/v1/tasks/{task}/run",
            Body::Empty,
            [
                "202", "202", "202", "403", "403", "404", "403", "401", "401",
            ],
        ),
        api(M::GET, "/v1/insights/prompts", Body::Empty, READ_LIST),
        api(M::GET, "/v1/insights", Body::Empty, READ_LIST),
        api(M::GET, "/v1/approvals", Body::Empty, READ_LIST),
        api(M::GET, "/v1/approvals/{approval}", Body::Empty, READ_USERS),
        api(
            M::POST,
            "/v1/approvals/{approval}/decision",
            Body::Json(|c| json!({"decision": "approve", "binding_digest": c.digest})),
            APPROVER_CHANGE,
        ),
        // A batch is refused whole only for callers who may not decide at all; another
        // workspace's owner gets 200 with the item's own `not_found` problem.
        api(
            M::POST,
            "/v1/approvals/decisions",
            Body::Json(
                |c| json!({"items": [{"id": c.approval, "binding_digest": c.digest, "decision": "approve"}]}),
            ),
            [
                "200", "200", "200", "403", "403", "200", "403", "401", "401",
            ],
        ),
        api(M::GET, "/v1/rules", Body::Empty, READ_LIST),
        api(
            M::POST,
            "/v1/rules",
            Body::Json(
                |c| json!({"tool": "email.send", "target": format!("{}@acme.test", c.unique), "scope": "agent", "scope_id": c.agent}),
            ),
            [
                "201", "201", "201", "403", "403", "404", "403", "401", "401",
            ],
        ),
        api(M::DELETE, "/v1/rules/{rule}", Body::Empty, APPROVER_CHANGE),
        api(M::GET, "/v1/audit", Body::Empty, READ_LIST),
        api(M::GET, "/v1/audit/verify", Body::Empty, READ_LIST),
        api(M::GET, "/v1/audit/export", Body::Empty, READ_LIST),
        streamed(api(M::GET, "/v1/events", Body::Empty, READ_LIST)),
        api(
            M::POST,
            "/v1/hooks/claude-code?wait_s=0",
            Body::Json(
                |_| json!({"tool_name": "fs.read", "tool_input": {"path": "a"}, "hook_event_name": "PreToolUse"}),
            ),
            [
                "deny", "deny", "deny", "deny", "allow", "deny", "allow", "deny", "deny",
            ],
        ),
        api(
            M::POST,
            "/v1/hooks/codex?wait_s=0",
            Body::Json(
                |_| json!({"tool_name": "read_file", "tool_input": {"path": "a"}, "hook_event_name": "PreToolUse"}),
            ),
            [
                "deny", "deny", "deny", "deny", "allow", "deny", "allow", "deny", "deny",
            ],
        ),
        api(
            M::POST,
            "/v1/hooks/gemini?wait_s=0",
            Body::Json(
                |_| json!({"tool_name": "read_file", "tool_input": {"absolute_path": "/a"}, "hook_event_name": "BeforeTool"}),
            ),
            [
                "deny", "deny", "deny", "deny", "allow", "deny", "allow", "deny", "deny",
            ],
        ),
        // Slack's callback answers to Slack's signature only, never to a bearer token:
        // with no Slack app configured (as here) it is not there for anyone
        // (tests/e2e/slack.rs has the signed cases).
        api(
            M::POST,
            "/v1/integrations/slack/actions",
            Body::Form(|_| vec![("payload", "{}".to_owned())]),
            ["404"; 9],
        ),
        // The web pages.
        // A signed-in browser goes straight on to the inbox.
        page(
            M::GET,
            "/login",
            Body::Empty,
            [
                "303", "303", "303", "303", "200", "303", "200", "200", "200",
            ],
        ),
        page(
            M::POST,
            "/login",
            Body::Login,
            [
                "303", "303", "303", "303", "403", "303", "403", "400", "401",
            ],
        ),
        page(M::GET, "/", Body::Empty, PAGE_LIST),
        // A notification's signed link: a forged one opens nothing, whoever follows it.
        page(M::GET, "/l/{link}", Body::Empty, ["404"; 9]),
        page(M::POST, "/l/{link}", Body::Empty, ["404"; 9]),
        page(M::GET, "/approvals/{approval}", Body::Empty, PAGE_OBJECT),
        page(
            M::POST,
            "/approvals/{approval}/decision",
            Body::Form(|c| {
                vec![
                    ("decision", "approve".into()),
                    ("binding_digest", c.digest.clone()),
                ]
            }),
            PAGE_APPROVER_POST,
        ),
        // The turn form names its approvals in the body; another workspace's is refused
        // item by item (its problem shown), so that page is a 200 too.
        page(
            M::POST,
            "/turns/decision",
            Body::Form(|c| vec![("item", format!("{} {}", c.approval, c.digest))]),
            [
                "200", "200", "200", "403", "303", "200", "303", "303", "303",
            ],
        ),
        // As the API: a call that is not ambiguous is a conflict (409), nothing changes.
        page(
            M::POST,
            "/calls/{allowed_call}/reconcile",
            Body::Form(|_| vec![("resolution", "ran".into())]),
            [
                "409", "409", "409", "403", "303", "404", "303", "303", "303",
            ],
        ),
        page(M::GET, "/web/cards/{approval}", Body::Empty, PAGE_OBJECT),
        streamed(page(M::GET, "/web/events", Body::Empty, PAGE_LIST)),
        page(M::GET, "/sessions/{session}", Body::Empty, PAGE_OBJECT),
        page(M::GET, "/audit", Body::Empty, PAGE_LIST),
        page(M::GET, "/rules", Body::Empty, PAGE_LIST),
        page(
            M::POST,
            "/rules/{rule}/revoke",
            Body::Form(|_| Vec::new()),
            PAGE_APPROVER_POST,
        ),
        page(M::GET, "/policy", Body::Empty, PAGE_LIST),
        page(
            M::POST,
            "/policy/preview",
            Body::Form(|_| vec![("source", POLICY.to_owned())]),
            [
                "200", "200", "403", "403", "303", "200", "303", "303", "303",
            ],
        ),
        page(
            M::POST,
            "/policy/save",
            Body::Form(|_| vec![("source", POLICY.to_owned())]),
            [
                "303", "303", "403", "403", "303", "303", "303", "303", "303",
            ],
        ),
        page(
            M::POST,
            "/logout",
            Body::Form(|_| Vec::new()),
            [
                "303", "303", "303", "303", "303", "303", "303", "303", "303",
            ],
        ),
    ]
}
