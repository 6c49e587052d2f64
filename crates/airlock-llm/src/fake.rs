//! `FakeOpenAi`: a real HTTP server on 127.0.0.1, port 0, that speaks the OpenAI
//! `/chat/completions` wire format (a JSON completion, or SSE chunks when the request says
//! `stream: true`), serves queued [`FakeReply`]s in order and records every request.
//!
//! It is test support (feature `fake`): tests of this crate and of the agent runtime drive
//! real HTTP through it instead of mocking the client.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

use crate::scripted::word_fragments;

/// One queued answer of the fake server.
#[derive(Debug, Clone)]
pub enum FakeReply {
    /// A normal text completion (`finish_reason: "stop"`), streamed when the request asks.
    Text(String),
    /// Tool calls as `(wire name as the model would send it, arguments)`, no text
    /// (`finish_reason: "tool_calls"`); streamed arguments arrive in several fragments.
    ToolCalls(Vec<(String, Value)>),
    /// Text, then tool calls.
    ToolCallsWithText(String, Vec<(String, Value)>),
    /// That status and body.
    Status(u16, String),
    /// Exactly this body with 200 (for malformed-output tests); its content type is
    /// `text/event-stream` when the request streams, else `application/json`.
    Raw(String),
    /// Wait, then reply (timeout tests).
    Delay(Duration, Box<FakeReply>),
    /// The reply with these extra response headers (`Retry-After`…).
    WithHeaders(Vec<(String, String)>, Box<FakeReply>),
    /// Tool calls with the ids the model gives them (`None`: the call has no `id` at all,
    /// as from some local servers), no text.
    ToolCallsWithIds(Vec<(Option<String>, String, Value)>),
    /// Text streamed as exactly these content fragments, one chunk each (joined when the
    /// request does not stream): a secret split across chunks, say.
    TextInPieces(Vec<String>),
    /// A `Text`, `ToolCalls` or `ToolCallsWithText` reply whose body breaks off before its
    /// end, as when the connection is cut: the event stream stops before `finish_reason`
    /// and `[DONE]`, a JSON body halfway.
    CutShort(Box<FakeReply>),
    /// Like `CutShort`, but the body ends cleanly (the last chunk of a chunked body, as a
    /// close-delimited body ends with a FIN): nothing tells the client it was cut but the
    /// missing end of the answer.
    EndsEarly(Box<FakeReply>),
    /// The reply's body sent frame by frame (each SSE chunk, or the JSON body in two
    /// halves) with this pause before each frame: a slow model that keeps streaming.
    Paced(Duration, Box<FakeReply>),
}

/// The running fake server; it stops when dropped.
pub struct FakeOpenAi {
    address: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

#[derive(Default)]
struct Shared {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    replies: VecDeque<FakeReply>,
    requests: Vec<Value>,
    headers: Vec<Vec<(String, String)>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A test that panicked while holding the lock has already failed; the data is fine.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl FakeOpenAi {
    /// Starts the server on 127.0.0.1 with a free port.
    // Test support: a machine that cannot bind a loopback port cannot run the tests at
    // all, and the signature (fixed for the runtime's tests) has no room for an error.
    #[allow(clippy::expect_used)]
    pub async fn start() -> FakeOpenAi {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("the fake OpenAI server binds 127.0.0.1:0");
        let address = listener
            .local_addr()
            .expect("a bound listener has an address");
        let shared = Arc::new(Shared::default());
        let router = Router::new()
            .route("/v1/chat/completions", post(chat))
            .fallback(no_route)
            .with_state(shared.clone());
        let server = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, router).await {
                tracing::error!(%error, "the fake OpenAI server stopped");
            }
        });
        FakeOpenAi {
            address,
            shared,
            server,
        }
    }

    /// `http://127.0.0.1:PORT/v1`, the `base_url` of an `LlmConfig`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// Queues a reply; replies are served in FIFO order.
    pub fn push(&self, reply: FakeReply) {
        self.shared.lock().replies.push_back(reply);
    }

    /// Every request body received, in order (a body that is not JSON is kept as a string).
    pub fn requests(&self) -> Vec<Value> {
        self.shared.lock().requests.clone()
    }

    /// The headers of every request received, in order, names in lower case.
    pub fn headers(&self) -> Vec<Vec<(String, String)>> {
        self.shared.lock().headers.clone()
    }

    /// How many queued replies are still unserved.
    pub fn pending(&self) -> usize {
        self.shared.lock().replies.len()
    }
}

impl Drop for FakeOpenAi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn chat(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let stream = request
        .get("stream")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let model = request.get("model").cloned().unwrap_or(Value::Null);
    let (number, reply) = {
        let mut inner = shared.lock();
        inner.requests.push(request);
        inner.headers.push(
            headers
                .iter()
                .map(|(name, value)| {
                    (
                        name.as_str().to_owned(),
                        String::from_utf8_lossy(value.as_bytes()).into_owned(),
                    )
                })
                .collect(),
        );
        (inner.requests.len(), inner.replies.pop_front())
    };
    let Some(mut reply) = reply else {
        let body = format!("fake OpenAI server: no reply queued for request {number}");
        return (StatusCode::INTERNAL_SERVER_ERROR, body).into_response();
    };

    let mut extra_headers = Vec::new();
    let mut shape = Shape::default();
    let reply = loop {
        match reply {
            FakeReply::CutShort(inner) => {
                shape.end = End::Cut;
                reply = *inner;
            }
            FakeReply::EndsEarly(inner) => {
                shape.end = End::Early;
                reply = *inner;
            }
            FakeReply::Paced(pause, inner) => {
                shape.pace = Some(pause);
                reply = *inner;
            }
            FakeReply::Delay(delay, inner) => {
                tokio::time::sleep(delay).await;
                reply = *inner;
            }
            FakeReply::WithHeaders(headers, inner) => {
                extra_headers.extend(headers);
                reply = *inner;
            }
            other => break other,
        }
    };
    let numbered = |calls: Vec<(String, Value)>| -> Vec<(Option<String>, String, Value)> {
        calls
            .into_iter()
            .enumerate()
            .map(|(index, (name, arguments))| {
                (Some(format!("call_fake_{number}_{index}")), name, arguments)
            })
            .collect()
    };
    let answer = Answer {
        number,
        model: &model,
        stream,
        shape,
    };
    let mut response = match reply {
        FakeReply::Text(text) => answer.completion(Some(Text::Words(text)), Vec::new()),
        FakeReply::TextInPieces(pieces) => {
            answer.completion(Some(Text::Pieces(pieces)), Vec::new())
        }
        FakeReply::ToolCalls(calls) => answer.completion(None, numbered(calls)),
        FakeReply::ToolCallsWithIds(calls) => answer.completion(None, calls),
        FakeReply::ToolCallsWithText(text, calls) => {
            answer.completion(Some(Text::Words(text)), numbered(calls))
        }
        FakeReply::Status(status, body) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let content_type = if serde_json::from_str::<Value>(&body).is_ok() {
                "application/json"
            } else {
                "text/plain; charset=utf-8"
            };
            (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
        }
        FakeReply::Raw(body) => {
            let content_type = if stream {
                "text/event-stream"
            } else {
                "application/json"
            };
            ([(header::CONTENT_TYPE, content_type)], body).into_response()
        }
        FakeReply::Delay(..)
        | FakeReply::WithHeaders(..)
        | FakeReply::CutShort(..)
        | FakeReply::EndsEarly(..)
        | FakeReply::Paced(..) => {
            // INVARIANT: the loop above unwrapped every wrapper.
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "fake OpenAI server: nested reply",
            )
                .into_response()
        }
    };
    for (name, value) in extra_headers {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

async fn no_route(uri: Uri) -> Response {
    let body = format!("fake OpenAI server: no route for {uri}");
    (StatusCode::NOT_FOUND, body).into_response()
}

/// How a reply's body is sent.
#[derive(Default, Clone, Copy)]
struct Shape {
    end: End,
    /// A pause before each frame.
    pace: Option<Duration>,
}

/// How a reply's body ends.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum End {
    #[default]
    Whole,
    /// Breaks off: the connection is aborted after the frames sent.
    Cut,
    /// Stops early but ends cleanly.
    Early,
}

/// The text of a completion, and how it streams.
enum Text {
    /// In word fragments, as from a real model.
    Words(String),
    /// In exactly these fragments.
    Pieces(Vec<String>),
}

impl Text {
    fn whole(&self) -> String {
        match self {
            Text::Words(text) => text.clone(),
            Text::Pieces(pieces) => pieces.concat(),
        }
    }

    fn fragments(&self) -> Vec<&str> {
        match self {
            Text::Words(text) => word_fragments(text).collect(),
            Text::Pieces(pieces) => pieces.iter().map(String::as_str).collect(),
        }
    }
}

/// One request's completion, as the request asked for it.
struct Answer<'a> {
    number: usize,
    model: &'a Value,
    stream: bool,
    shape: Shape,
}

impl Answer<'_> {
    /// A completion with text (in these pieces when streamed) and `calls`
    /// (`(id, name, arguments)`), as one JSON object or as SSE chunks, sent as `shape` says.
    fn completion(
        &self,
        text: Option<Text>,
        calls: Vec<(Option<String>, String, Value)>,
    ) -> Response {
        let Answer {
            number,
            model,
            stream,
            shape,
        } = self;
        let id = format!("chatcmpl-fake-{number}");
        let finish_reason = if calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        let calls: Vec<(Option<String>, String, String)> = calls
            .into_iter()
            .map(|(id, name, arguments)| (id, name, arguments.to_string()))
            .collect();
        let whole = shape.end == End::Whole;
        if !stream {
            let text = text.as_ref().map(Text::whole);
            let mut message = json!({"role": "assistant", "content": text});
            if !calls.is_empty() {
                message["tool_calls"] = calls
                    .iter()
                    .map(|(id, name, arguments)| {
                        let mut call = json!({"type": "function",
                               "function": {"name": name, "arguments": arguments}});
                        if let Some(id) = id {
                            call["id"] = json!(id);
                        }
                        call
                    })
                    .collect();
            }
            let body = json!({
                "id": id, "object": "chat.completion", "created": 1_700_000_000, "model": model,
                "choices": [{"index": 0, "message": message, "logprobs": null,
                             "finish_reason": finish_reason}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            });
            let body: Vec<char> = body.to_string().chars().collect();
            let half = body.len() / 2;
            let (first, second) = body.split_at(half);
            let mut frames = vec![first.iter().collect::<String>()];
            if whole {
                frames.push(second.iter().collect());
            }
            return (
                [(header::CONTENT_TYPE, "application/json")],
                frames_body(frames, *shape),
            )
                .into_response();
        }

        let chunk = |delta: Value, finish_reason: Option<&str>| {
            let chunk = json!({
                "id": id, "object": "chat.completion.chunk", "created": 1_700_000_000,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "logprobs": null,
                             "finish_reason": finish_reason}],
            });
            format!("data: {chunk}\n\n")
        };
        let mut frames = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
        if let Some(text) = &text {
            frames.extend(
                text.fragments()
                    .into_iter()
                    .map(|fragment| chunk(json!({"content": fragment}), None)),
            );
        }
        for (index, (id, name, arguments)) in calls.iter().enumerate() {
            let mut opening = json!({"index": index, "type": "function",
                                     "function": {"name": name, "arguments": ""}});
            if let Some(id) = id {
                opening["id"] = json!(id);
            }
            frames.push(chunk(json!({"tool_calls": [opening]}), None));
            // The arguments arrive in three pieces or so, as from a real model.
            let characters: Vec<char> = arguments.chars().collect();
            for piece in characters.chunks(characters.len().div_ceil(3).max(1)) {
                let piece: String = piece.iter().collect();
                let fragment = json!({"index": index, "function": {"arguments": piece}});
                frames.push(chunk(json!({"tool_calls": [fragment]}), None));
            }
        }
        if whole {
            frames.push(chunk(json!({}), Some(finish_reason)));
            frames.push("data: [DONE]\n\n".to_owned());
        }
        let headers = [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ];
        (headers, frames_body(frames, *shape)).into_response()
    }
}

/// A body sent frame by frame, each after `shape.pace` when set; when `shape.end` is
/// `Cut`, an error after the last frame makes the server abort the connection instead of
/// ending the body.
fn frames_body(frames: Vec<String>, shape: Shape) -> Body {
    use futures::StreamExt;
    let pace = shape.pace;
    let frames = futures::stream::iter(frames).then(move |frame| async move {
        if let Some(pause) = pace {
            tokio::time::sleep(pause).await;
        }
        Ok::<_, std::io::Error>(Bytes::from(frame))
    });
    if shape.end != End::Cut {
        return Body::from_stream(frames);
    }
    // The pause lets the server flush the frames before it drops the connection, so the
    // client really receives the first part.
    let cut = futures::stream::once(async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        Err(std::io::Error::other("the fake cuts the connection"))
    });
    Body::from_stream(frames.chain(cut))
}
