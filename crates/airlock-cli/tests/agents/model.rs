//! A fake model server speaking the three wire formats the agents use — Anthropic
//! Messages (SSE, Claude Code), OpenAI Responses (SSE, Codex) and Gemini
//! `generateContent` / `streamGenerateContent?alt=sse` (Gemini CLI) — on a free port.
//!
//! It is scripted by turn: to the agent's first request it answers with one shell tool
//! call of the scripted command; each later request carries what the tool returned (or
//! the hook's denial), which is recorded — so a test asserts "the reason reaches the model"
//! from the model's side — and answered with the same call again while the script asks
//! for retries, then with a short text that ends the agent's run. Requests without tools
//! (titles, routing, quota probes) get a short text and change nothing.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// Called with each tool result before the model answers it (on a blocking thread): the
/// late-approval test approves here, between the hook's deny and the model's retry.
pub type OnResult = Box<dyn Fn(&str) + Send + Sync>;

/// What the model does.
pub struct Script {
    /// The shell command of every tool call.
    pub command: String,
    /// How many times the model makes the call (2: once, then the identical retry).
    pub calls: usize,
    /// Codex only: the call asks to run outside the sandbox (`require_escalated`), which
    /// is what makes Codex send `PermissionRequest`.
    pub escalate: bool,
    /// OpenAI Responses only: the command is the person's newest prompt after `run: `
    /// (so one interactive session can ask for several commands), one call per prompt;
    /// `command` and `calls` are then unused.
    pub prompted: bool,
    pub on_result: Option<OnResult>,
}

impl Script {
    pub fn call(command: &str) -> Script {
        Script {
            command: command.to_owned(),
            calls: 1,
            escalate: false,
            prompted: false,
            on_result: None,
        }
    }

    /// A model that runs whatever the person's newest prompt says after `run: `.
    pub fn prompted() -> Script {
        Script {
            prompted: true,
            ..Script::call("")
        }
    }
}

struct Shared {
    script: Script,
    made: Mutex<usize>,
    results: Mutex<Vec<String>>,
    /// Every request the agent sent, as JSON text.
    requests: Mutex<Vec<String>>,
}

/// The server; it stops when dropped.
pub struct FakeModel {
    pub url: String,
    shared: Arc<Shared>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl FakeModel {
    pub fn start(script: Script) -> FakeModel {
        let shared = Arc::new(Shared {
            script,
            made: Mutex::new(0),
            results: Mutex::new(Vec::new()),
            requests: Mutex::new(Vec::new()),
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (bound, port) = std::sync::mpsc::channel();
        let state = shared.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                bound.send(listener.local_addr().unwrap().port()).unwrap();
                let app = Router::new().fallback(answer).with_state(state);
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap();
            });
        });
        let port = port.recv().unwrap();
        FakeModel {
            url: format!("http://127.0.0.1:{port}"),
            shared,
            _stop: stop,
        }
    }

    /// What the agent sent back after each tool call, in order (JSON text of the tool
    /// result as it reached the model).
    pub fn results(&self) -> Vec<String> {
        self.shared.results.lock().unwrap().clone()
    }

    /// Every request the agent sent the model (JSON text), in order: what it was told.
    pub fn requests(&self) -> Vec<String> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// How many tool calls the model made.
    pub fn calls_made(&self) -> usize {
        *self.shared.made.lock().unwrap()
    }
}

/// The wire formats, by request path.
#[derive(Clone, Copy)]
enum Wire {
    Anthropic,
    OpenAi,
    Gemini { stream: bool },
}

/// One model turn.
enum Turn {
    Call(usize),
    Text,
}

async fn answer(State(shared): State<Arc<Shared>>, uri: Uri, body: Bytes) -> Response {
    let path = uri.path().to_owned();
    let wire = if path.ends_with("/messages") {
        Wire::Anthropic
    } else if path.ends_with("/responses") {
        Wire::OpenAi
    } else if path.contains(":streamGenerateContent") {
        Wire::Gemini { stream: true }
    } else if path.contains(":generateContent") {
        Wire::Gemini { stream: false }
    } else {
        return (StatusCode::NOT_FOUND, "not a model endpoint").into_response();
    };
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    // The result callback may block on HTTP calls to airlock.
    let answered = tokio::task::spawn_blocking(move || respond(&shared, wire, &request)).await;
    match answered {
        Ok(response) => response,
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
    }
}

fn respond(shared: &Shared, wire: Wire, request: &Value) -> Response {
    shared.requests.lock().unwrap().push(request.to_string());
    if shared.script.prompted {
        return prompted(shared, request);
    }
    let turn = if has_tools(wire, request) {
        let result = tool_result(wire, request);
        if let Some(result) = &result {
            shared.results.lock().unwrap().push(result.clone());
            if let Some(on_result) = &shared.script.on_result {
                on_result(result);
            }
        }
        let mut made = shared.made.lock().unwrap();
        if *made < shared.script.calls {
            *made += 1;
            Turn::Call(*made)
        } else {
            Turn::Text
        }
    } else {
        Turn::Text
    };
    let command = &shared.script.command;
    match wire {
        Wire::Anthropic => sse(anthropic(request, &turn, command)),
        Wire::OpenAi => sse(openai(request, &turn, command, shared.script.escalate)),
        Wire::Gemini { stream } => {
            let chunk = gemini(&turn, command);
            if stream {
                sse(format!("data: {chunk}\n\n"))
            } else {
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    chunk.to_string(),
                )
                    .into_response()
            }
        }
    }
}

/// [`Script::prompted`]: a tool call of the command in the newest `run: ` prompt, or, once
/// its result is back (recorded), a text that ends the turn.
fn prompted(shared: &Shared, request: &Value) -> Response {
    let last = request["input"].as_array().and_then(|input| input.last());
    let prompt = last
        .filter(|item| item["role"] == "user")
        .and_then(|item| item["content"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|part| part["text"].as_str())
        .find_map(|text| text.trim().strip_prefix("run: ").map(str::to_owned));
    let turn = match prompt {
        Some(command) if has_tools(Wire::OpenAi, request) => {
            let mut made = shared.made.lock().unwrap();
            *made += 1;
            let turn = Turn::Call(*made);
            return sse(openai(request, &turn, command.trim(), false));
        }
        _ => {
            if let Some(result) = tool_result(Wire::OpenAi, request) {
                shared.results.lock().unwrap().push(result);
            }
            Turn::Text
        }
    };
    sse(openai(request, &turn, "", false))
}

fn sse(text: String) -> Response {
    ([(header::CONTENT_TYPE, "text/event-stream")], text).into_response()
}

fn has_tools(wire: Wire, request: &Value) -> bool {
    let tools = &request["tools"];
    match wire {
        // Claude Code's side requests carry no Bash tool.
        Wire::Anthropic => tools
            .as_array()
            .is_some_and(|tools| tools.iter().any(|tool| tool["name"] == "Bash")),
        Wire::OpenAi | Wire::Gemini { .. } => tools.as_array().is_some_and(|t| !t.is_empty()),
    }
}

/// The tool result in the request's newest message, as JSON text.
fn tool_result(wire: Wire, request: &Value) -> Option<String> {
    match wire {
        Wire::Anthropic => {
            let last = request["messages"].as_array()?.last()?;
            // Claude Code may fold earlier results into the newest message: the newest
            // result is the last one.
            let blocks = last["content"].as_array()?;
            let result = blocks
                .iter()
                .rev()
                .find(|block| block["type"] == "tool_result")?;
            Some(result.to_string())
        }
        Wire::OpenAi => {
            let last = request["input"].as_array()?.last()?;
            (last["type"] == "function_call_output").then(|| last.to_string())
        }
        Wire::Gemini { .. } => {
            let last = request["contents"].as_array()?.last()?;
            let parts = last["parts"].as_array()?;
            let results: Vec<&Value> = parts
                .iter()
                .filter(|part| part.get("functionResponse").is_some())
                .collect();
            (!results.is_empty()).then(|| json!(results).to_string())
        }
    }
}

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn anthropic(request: &Value, turn: &Turn, command: &str) -> String {
    let message = json!({
        "id": "msg_fake", "type": "message", "role": "assistant", "model": request["model"],
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 1, "output_tokens": 1}
    });
    let (block, delta, stop) = match turn {
        Turn::Call(n) => (
            json!({"type": "tool_use", "id": format!("toolu_{n}"), "name": "Bash", "input": {}}),
            json!({"type": "input_json_delta", "partial_json":
                json!({"command": command, "description": "the scripted command"}).to_string()}),
            "tool_use",
        ),
        Turn::Text => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": "done"}),
            "end_turn",
        ),
    };
    [
        event(
            "message_start",
            json!({"type": "message_start", "message": message}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": block}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                "usage": {"output_tokens": 1}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ]
    .concat()
}

fn openai(request: &Value, turn: &Turn, command: &str, escalate: bool) -> String {
    let item = match turn {
        Turn::Call(n) => {
            // Codex 0.169 offers `exec_command` (unified exec); older ones `shell`.
            let unified = request["tools"]
                .as_array()
                .is_some_and(|tools| tools.iter().any(|tool| tool["name"] == "exec_command"));
            let (name, mut arguments) = if unified {
                ("exec_command", json!({"cmd": command}))
            } else {
                ("shell", json!({"command": ["bash", "-lc", command]}))
            };
            if escalate {
                arguments["sandbox_permissions"] = json!("require_escalated");
                arguments["justification"] = json!("the scripted command needs it");
            }
            json!({"type": "function_call", "id": format!("fc_{n}"), "call_id": format!("call_{n}"),
                "name": name, "arguments": arguments.to_string()})
        }
        Turn::Text => json!({"type": "message", "id": "msg_fake", "role": "assistant",
            "content": [{"type": "output_text", "text": "done", "annotations": []}]}),
    };
    let usage = json!({"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0}});
    let sent = |data: Value| {
        let name = data["type"].as_str().unwrap_or_default().to_owned();
        event(&name, data)
    };
    [
        sent(json!({"type": "response.created", "response": {"id": "resp_fake"}})),
        sent(json!({"type": "response.output_item.done", "item": item})),
        sent(
            json!({"type": "response.completed", "response": {"id": "resp_fake",
            "object": "response", "status": "completed", "output": [], "usage": usage}}),
        ),
    ]
    .concat()
}

fn gemini(turn: &Turn, command: &str) -> Value {
    let part = match turn {
        Turn::Call(_) => json!({"functionCall": {"name": "run_shell_command",
            "args": {"command": command}}}),
        Turn::Text => json!({"text": "done"}),
    };
    json!({
        "candidates": [{"content": {"role": "model", "parts": [part]},
            "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}
    })
}
