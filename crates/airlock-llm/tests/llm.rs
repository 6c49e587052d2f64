//! airlock-llm through its public API: the OpenAI client over real HTTP against the fake
//! server on port 0, and the scripted provider.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod llm {
    pub mod auth;
    pub mod chat;
    pub mod failures;
    pub mod harness;
    pub mod scripted;
}
