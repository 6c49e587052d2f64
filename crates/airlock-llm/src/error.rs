//! Why a model turn failed, and whether trying again could help.

/// Why a model turn failed. Messages never contain the API key.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The provider is misconfigured: a bad base URL, an API key variable named but unset
    /// or empty, an unreadable or invalid scenario file.
    #[error("llm configuration: {0}")]
    Config(String),
    /// The server answered with an error status: a non-retryable one, or a retryable one
    /// after the last retry. `body` is truncated to about 500 characters.
    #[error("the llm server answered {status}: {body}")]
    Status { status: u16, body: String },
    /// The server stayed silent longer than `ClientOptions::idle_timeout`: before its
    /// response headers, or in the middle of its body.
    #[error("the llm request timed out: {0}")]
    Timeout(String),
    /// The connection failed: refused, reset, cut in the middle of a response (also when
    /// the body ends cleanly before the answer does).
    #[error("the llm request failed: {0}")]
    Transport(String),
    /// The server answered 200 with something that is not a usable completion.
    #[error("the llm response is malformed: {0}")]
    Malformed(String),
}

impl LlmError {
    /// Whether the same request may succeed later: rate limits, server overload, gateway
    /// errors, timeouts and connection failures. A malformed answer or a 4xx is final.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Status { status, .. } => matches!(status, 429 | 500 | 502 | 503 | 504),
            LlmError::Timeout(_) | LlmError::Transport(_) => true,
            LlmError::Config(_) | LlmError::Malformed(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn retryable_statuses_are_the_transient_ones() {
        let status = |status| LlmError::Status {
            status,
            body: String::new(),
        };
        for code in [429, 500, 502, 503, 504] {
            assert!(status(code).is_retryable(), "{code}");
        }
        for code in [400, 401, 403, 404, 422, 501] {
            assert!(!status(code).is_retryable(), "{code}");
        }
        assert!(LlmError::Timeout("t".into()).is_retryable());
        assert!(!LlmError::Malformed("m".into()).is_retryable());
    }
}
