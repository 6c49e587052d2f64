//! Shared setup: a client of the fake server, fast options, a delta recorder.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_llm::fake::FakeOpenAi;
use airlock_llm::{
    ChatMessage, ChatRequest, ClientOptions, Completion, LlmConfig, LlmError, OpenAiClient,
    Provider, ToolDef,
};
use serde_json::json;

/// Options that keep retrying tests fast.
pub fn fast_options() -> ClientOptions {
    ClientOptions {
        idle_timeout: Duration::from_secs(5),
        max_retries: 3,
        backoff: Duration::from_millis(10),
    }
}

pub fn config(fake: &FakeOpenAi, stream: bool) -> LlmConfig {
    LlmConfig {
        base_url: fake.base_url(),
        model: "test-model".into(),
        api_key_env: None,
        stream: Some(stream),
    }
}

pub fn client(fake: &FakeOpenAi, stream: bool) -> OpenAiClient {
    OpenAiClient::new(&config(fake, stream), fast_options()).unwrap()
}

/// A one-line user request offering `email.send`.
pub fn request(text: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::User {
            content: text.into(),
        }],
        tools: vec![email_send()],
    }
}

pub fn email_send() -> ToolDef {
    ToolDef {
        name: "email.send".into(),
        description: "Send an email".into(),
        parameters: json!({"type": "object", "properties": {"to": {"type": "string"}}}),
    }
}

/// Runs one turn and returns the completion (or error) and the deltas received.
pub async fn complete(
    provider: &dyn Provider,
    request: &ChatRequest,
) -> (Result<Completion, LlmError>, Vec<String>) {
    let deltas = Arc::new(Mutex::new(Vec::new()));
    let sink = deltas.clone();
    let on_delta = move |fragment: &str| sink.lock().unwrap().push(fragment.to_owned());
    let result = provider.complete(request, &on_delta).await;
    let deltas = deltas.lock().unwrap().clone();
    (result, deltas)
}
