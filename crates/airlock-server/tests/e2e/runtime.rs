//! The built-in agent runtime over HTTP: DESIGN.md §10 behaviours 1–11 and 13, the real
//! OpenAI-compatible client path, a model that cannot be trusted, and restarts.

mod behaviours;
mod latency;
mod llm;
mod mcp;
mod pause;
mod restarts;
mod resume;
mod standing;
mod support;
mod tasks;
mod untrusted_model;
mod workspace_stream;
