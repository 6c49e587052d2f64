//! The authorization matrix (G6, DESIGN.md §6.1): every route of the router — the API and
//! the web pages — against every kind of caller, as one table. Each row is one endpoint
//! with the expected answer per column; the test runs every cell and reports every
//! mismatch at once, so a table edit shows the whole picture.
//!
//! Columns: the four user roles of workspace `default`, its agent, the owner and an agent
//! of another workspace, no credentials, and a token (or cookie) nobody holds. A cell is a
//! status code, or `allow` / `deny` for the Claude Code hook, which answers 200 either way
//! (Claude Code runs the tool on anything but 2xx) and says its verdict in the body.
//!
//! Rows that change something get fresh objects per cell (a new pending approval, rule,
//! run, task…), so one cell never spoils the next. Web rows sign in per cell (`POST
//! /login` with the column's token) and post forms with the session's CSRF token; agent
//! columns cannot sign in, so they send their bearer token to the page, which ignores it.
//!
//! Reading guide: another workspace's objects are 404 (they do not exist there); a role
//! check that comes before any lookup answers 403 whatever the id, which leaks nothing.

mod table;

use crate::support::{PATIENCE, POLICY};
use airlock_protocol::Role;
use airlock_testkit::TestServer;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use table::{rows, Body, Row, COLUMNS};

/// A scripted model: `#email` asks (the run suspends), `#time` completes at once.
const SCENARIOS: &str = r##"
[[scenario]]
marker = "#email"
[[scenario.turn]]
events = [{ type = "tool_use", name = "email.send", arguments = { to = "bob@acme.test", subject = "Hi", body = "hi" } }]
[[scenario.turn]]
events = [{ type = "text", text = "done" }]

[[scenario]]
marker = "#time"
[[scenario.turn]]
events = [{ type = "text", text = "It is late." }]
"##;

/// The server, the callers of each column and the shared agent.
struct Fixture {
    server: TestServer,
    /// One token per column (`none` and `bad` hold what they send, if anything).
    tokens: [String; 9],
    agent_id: String,
    http: reqwest::Client,
    counter: AtomicUsize,
}

/// The objects one cell's request names, made fresh for it.
#[derive(Default)]
struct Cell {
    unique: String,
    agent: String,
    approval: String,
    digest: String,
    pending_call: String,
    allowed_call: String,
    /// An allowed call whose grant its agent redeemed.
    redeemed_call: String,
    session: String,
    run: String,
    task: String,
    rule: String,
}

impl Fixture {
    async fn start() -> Fixture {
        let server = TestServer::start().await.unwrap();
        server.put_policy(POLICY).await.unwrap();
        let scenarios = server.data_dir().join("matrix.scenarios.toml");
        std::fs::write(&scenarios, SCENARIOS).unwrap();
        let llm =
            json!({"base_url": format!("scripted:{}", scenarios.display()), "model": "script"});
        let created = server
            .client
            .post(
                "/v1/agents",
                &server.owner_token,
                &json!({"name": "scout", "llm": llm, "system_prompt": "test"}),
            )
            .await
            .unwrap()
            .expect_status(201)
            .unwrap();
        let agent_id = created["agent"]["id"].as_str().unwrap().to_owned();
        let agent = created["token"].as_str().unwrap().to_owned();
        let (_, admin) = server.create_user("ada", Role::Admin).await.unwrap();
        let (_, approver) = server.create_user("arno", Role::Approver).await.unwrap();
        let (_, viewer) = server.create_user("vera", Role::Viewer).await.unwrap();
        let other_owner = server.second_workspace("elsewhere").await.unwrap();
        // The other workspace allows reads too, so its agent's hook is an allow.
        server
            .client
            .put_text("/v1/policy", &other_owner, POLICY)
            .await
            .unwrap()
            .expect_status(200)
            .unwrap();
        let (_, other_agent) = server.create_agent_as(&other_owner, "spy").await.unwrap();
        let tokens = [
            server.owner_token.clone(),
            admin,
            approver,
            viewer,
            agent,
            other_owner,
            other_agent,
            String::new(),
            "alk_this-token-belongs-to-nobody".to_owned(),
        ];
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        Fixture {
            server,
            tokens,
            agent_id,
            http,
            counter: AtomicUsize::new(0),
        }
    }

    fn owner(&self) -> &str {
        &self.server.owner_token
    }

    fn agent_token(&self) -> &str {
        &self.tokens[4]
    }

    /// Fresh objects for whatever `path` and `body` name.
    async fn cell(&self, row: &Row) -> Cell {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut cell = Cell {
            unique: format!("matrix{n}"),
            agent: self.agent_id.clone(),
            ..Cell::default()
        };
        let path = row.path;
        // A batch names its approval in the body.
        let batch = path == "/v1/approvals/decisions" || path == "/turns/decision";
        if path.contains("{approval}") || path.contains("{pending_call}") || batch {
            let call = self
                .server
                .submit(
                    self.agent_token(),
                    "email.send",
                    json!({"to": format!("{}@acme.test", cell.unique), "body": "hi"}),
                )
                .await
                .unwrap()
                .expect_status(201)
                .unwrap();
            cell.pending_call = text(&call["id"]);
            cell.approval = text(&call["approval_id"]);
            let approval = self.get(&format!("/v1/approvals/{}", cell.approval)).await;
            cell.digest = text(&approval["binding_digest"]);
        }
        if path.contains("{allowed_call}") {
            let call = self
                .server
                .submit(self.agent_token(), "fs.read", json!({"path": "a"}))
                .await
                .unwrap()
                .expect_status(201)
                .unwrap();
            assert_eq!(call["status"], "allowed", "{call}");
            cell.allowed_call = text(&call["id"]);
        }
        if path.contains("{redeemed_call}") {
            let call = self
                .server
                .submit(self.agent_token(), "fs.read", json!({"path": "a"}))
                .await
                .unwrap()
                .expect_status(201)
                .unwrap();
            cell.redeemed_call = text(&call["id"]);
            self.server
                .client
                .post_empty(
                    &format!("/v1/calls/{}/redeem", cell.redeemed_call),
                    self.agent_token(),
                )
                .await
                .unwrap()
                .expect_status(200)
                .unwrap();
        }
        if path.contains("{session}") || path.contains("{run}") {
            cell.session = self.session().await;
        }
        if path.contains("{run}") {
            cell.run = self.suspended_run(&cell.session).await;
        }
        if path.contains("{task}") {
            let body = json!({"title": cell.unique, "instructions": "#time", "agent": "scout", "cron": "0 3 * * *"});
            let created = self.post("/v1/tasks", &body, 201).await;
            cell.task = text(&created["task"]["id"]);
        }
        if path.contains("{rule}") {
            let body = json!({"tool": "email.send", "target": format!("{}@acme.test", cell.unique), "scope": "agent", "scope_id": self.agent_id});
            cell.rule = text(&self.post("/v1/rules", &body, 201).await["id"]);
        }
        cell
    }

    async fn get(&self, path: &str) -> Value {
        self.server
            .client
            .get(path, self.owner())
            .await
            .unwrap()
            .expect_status(200)
            .unwrap()
    }

    async fn post(&self, path: &str, body: &Value, status: u16) -> Value {
        self.server
            .client
            .post(path, self.owner(), body)
            .await
            .unwrap()
            .expect_status(status)
            .unwrap()
    }

    async fn session(&self) -> String {
        let body = json!({"agent_id": self.agent_id, "title": "matrix"});
        text(&self.post("/v1/sessions", &body, 201).await["id"])
    }

    /// A run of `session` parked on an approval (`#email`).
    async fn suspended_run(&self, session: &str) -> String {
        let path = format!("/v1/sessions/{session}/messages");
        let run = text(&self.post(&path, &json!({"text": "#email"}), 202).await["run_id"]);
        let start = Instant::now();
        loop {
            let state = self.get(&format!("/v1/runs/{run}")).await;
            if state["state"] == "awaiting_approval" {
                return run;
            }
            assert!(start.elapsed() < PATIENCE, "the run did not park: {state}");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// Signs `token` in; returns the cookie value, or `None` when the sign-in is refused.
    async fn sign_in(&self, token: &str) -> Option<String> {
        let response = self
            .http
            .post(self.server.client.url("/login"))
            .form(&[("token", token)])
            .send()
            .await
            .unwrap();
        let cookie = response.headers().get(SET_COOKIE)?.to_str().ok()?;
        let value = cookie.split(';').next()?.split_once('=')?.1.to_owned();
        Some(value)
    }

    /// Runs one cell; returns what it got (a status, or `allow`/`deny`) and the body.
    async fn run_cell(&self, row: &Row, column: usize) -> (String, String) {
        let cell = self.cell(row).await;
        let path = fill(row.path, &cell);
        let token = &self.tokens[column];
        let mut request = self
            .http
            .request(row.method.clone(), self.server.client.url(&path));
        let mut csrf = None;
        if row.page {
            let cookie = match COLUMNS[column] {
                "none" => None,
                "bad" => Some(format!("alw_{}", "0".repeat(64))),
                _ if matches!(row.body, Body::Login) => None,
                _ => self.sign_in(token).await,
            };
            if let Some(value) = cookie {
                csrf = Some(airlock_server::web::session::csrf_token(&value));
                request = request.header(COOKIE, format!("airlock_session={value}"));
            }
            if COLUMNS[column].ends_with("agent") {
                request = request.header(AUTHORIZATION, format!("Bearer {token}"));
            }
        } else if !token.is_empty() {
            request = request.header(AUTHORIZATION, format!("Bearer {token}"));
        }
        request = match row.body {
            Body::Empty => request,
            Body::Json(body) => request.json(&body(&cell)),
            Body::Toml(text) => request
                .header(CONTENT_TYPE, "application/toml")
                .body(text.to_owned()),
            Body::Form(fields) => {
                let mut fields: Vec<(&str, String)> = fields(&cell);
                if let Some(csrf) = csrf {
                    fields.push(("csrf", csrf));
                }
                request.form(&fields)
            }
            Body::Login => request.form(&[("token", token.as_str())]),
        };
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        if row.stream && status == 200 {
            return (status.to_string(), "(a stream)".into());
        }
        let location = response
            .headers()
            .get(LOCATION)
            .and_then(|l| l.to_str().ok())
            .map(str::to_owned);
        let body = response.text().await.unwrap();
        if row.path.starts_with("/v1/hooks/") && status == 200 {
            let json: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            // Each agent's own shape: Claude Code's and Codex's `permissionDecision`,
            // Codex's `decision.behavior`, Gemini's `decision`; Codex's PreToolUse says
            // nothing (`{}`) to let a call through.
            let inner = &json["hookSpecificOutput"];
            let decision = inner["permissionDecision"]
                .as_str()
                .or_else(|| inner["decision"]["behavior"].as_str())
                .or_else(|| json["decision"].as_str())
                .or_else(|| (json == serde_json::json!({})).then_some("allow"))
                .unwrap_or("?")
                .to_owned();
            return (decision, body);
        }
        let shown = match location {
            Some(location) => format!("→ {location}"),
            None => body.chars().take(200).collect(),
        };
        (status.to_string(), shown)
    }
}

fn fill(path: &str, cell: &Cell) -> String {
    path.replace("{agent}", &cell.agent)
        .replace("{approval}", &cell.approval)
        .replace("{pending_call}", &cell.pending_call)
        .replace("{allowed_call}", &cell.allowed_call)
        .replace("{redeemed_call}", &cell.redeemed_call)
        .replace("{session}", &cell.session)
        .replace("{run}", &cell.run)
        .replace("{task}", &cell.task)
        .replace("{rule}", &cell.rule)
        .replace("{link}", "forged.link-token")
}

fn text(value: &Value) -> String {
    value
        .as_str()
        .unwrap_or_else(|| panic!("expected a string, got {value}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_every_caller_as_the_table_says() {
    let fixture = Fixture::start().await;
    let rows = rows();
    let mut mismatches = Vec::new();
    let mut cells = 0;
    for row in &rows {
        for (column, expected) in row.expect.iter().enumerate() {
            let (got, body) = fixture.run_cell(row, column).await;
            cells += 1;
            if got != *expected {
                mismatches.push(format!(
                    "{} {} as {}: expected {expected}, got {got}: {body}",
                    row.method, row.path, COLUMNS[column]
                ));
            }
        }
    }
    assert!(cells >= rows.len() * COLUMNS.len());
    assert!(
        mismatches.is_empty(),
        "{} of {cells} cells differ from the table:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

#[test]
fn the_table_covers_every_route_of_the_router() {
    // Every `.route("…"` of the router and the web pages has a row, so a new route
    // without a row fails here. (The two assets are routed by constant and skipped:
    // static files with no authority at all.)
    let sources = [
        include_str!("../../src/router.rs"),
        include_str!("../../src/web/mod.rs"),
    ];
    let covered: Vec<String> = rows()
        .iter()
        .map(|row| row.path.split('?').next().unwrap_or_default().to_owned())
        .collect();
    let mut missing = Vec::new();
    for source in sources {
        for piece in source.split(".route(").skip(1) {
            let Some(route) = piece.trim_start().strip_prefix('"') else {
                continue;
            };
            let route = route.split('"').next().unwrap_or_default();
            let normalized = normalize(route);
            if !covered.iter().any(|path| normalize(path) == normalized) {
                missing.push(route.to_owned());
            }
        }
    }
    assert!(missing.is_empty(), "routes without a row: {missing:?}");
}

/// `/v1/calls/{pending_call}` and `/v1/calls/{id}` are the same route.
fn normalize(path: &str) -> String {
    path.split('/')
        .map(|part| if part.starts_with('{') { "{}" } else { part })
        .collect::<Vec<_>>()
        .join("/")
}
