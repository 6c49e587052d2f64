//! LLM providers for airlock's agent runtime: one model turn at a time, behind the
//! [`Provider`] trait.
//!
//! - [`message`]: the conversation ([`ChatMessage`], [`ToolCall`], [`ToolDef`]), one turn's
//!   request ([`ChatRequest`]) and its answer ([`Completion`]).
//! - [`provider`]: the [`Provider`] trait the runtime drives.
//! - [`error`]: [`LlmError`], and which errors are worth a retry.
//! - [`openai`]: [`OpenAiClient`], any OpenAI-compatible `/chat/completions` endpoint
//!   (OpenAI, llama.cpp server, Ollama, vLLM), streaming or not, with retries.
//! - [`scripted`]: [`ScriptedProvider`], TOML scenarios replayed by marker, for the demo
//!   and for tests that need no HTTP.
//! - `fake` (feature `fake`): `FakeOpenAi`, a real HTTP server on port 0 that speaks the
//!   OpenAI wire format, replays queued replies and records requests.
//!
//! Architecture invariant: the rest of airlock only ever sees airlock tool names
//! (`email.send`); the wire encoding of names is private to [`openai`]. This crate knows
//! nothing about the gate, the store or policy.

pub mod error;
#[cfg(feature = "fake")]
pub mod fake;
pub mod message;
pub mod openai;
pub mod provider;
pub mod scripted;

pub use airlock_protocol::LlmConfig;
pub use error::LlmError;
pub use message::{ChatMessage, ChatRequest, Completion, ToolCall, ToolDef};
pub use openai::{ClientOptions, OpenAiClient};
pub use provider::Provider;
pub use scripted::ScriptedProvider;
