//! The one seam between the agent runtime and a model: [`Provider::complete`] runs one
//! model turn.

use crate::{ChatRequest, Completion, LlmError};

/// Something that can answer one model turn: the HTTP client, or the scripted provider.
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    /// One model turn. `on_delta` receives text fragments as they stream (called with the
    /// whole text once when not streaming).
    ///
    /// The callback is spelled `dyn for<'a> Fn(&'a str)`, which is the same type as
    /// `dyn Fn(&str)`: `async_trait` rewrites every elided lifetime of a signature, the one
    /// inside `Fn(&str)` included, into one lifetime of the call, and an implementation
    /// could then pass only text that outlives the call, never a fragment it just read.
    /// Implementations must use the same spelling.
    async fn complete(
        &self,
        request: &ChatRequest,
        on_delta: &(dyn for<'a> Fn(&'a str) + Send + Sync),
    ) -> Result<Completion, LlmError>;
}
