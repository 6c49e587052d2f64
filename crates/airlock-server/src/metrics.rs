//! Prometheus counters, hand-rolled on atomics: responses by status class, calls by
//! outcome at submission, decisions by verdict, open event streams; the number of
//! long-polling callers is read from the gate when scraped.

use crate::AppState;
use airlock_protocol::CallStatus;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// The server's counters. One per server; shared by every request.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Index 0 is 1xx … index 4 is 5xx.
    responses: [AtomicU64; 5],
    /// Indexed like `CallStatus::ALL`.
    calls: [AtomicU64; 7],
    approved: AtomicU64,
    rejected: AtomicU64,
    event_streams: AtomicI64,
}

impl Metrics {
    pub fn response(&self, status: StatusCode) {
        let class = usize::from(status.as_u16() / 100).clamp(1, 5) - 1;
        self.responses[class].fetch_add(1, Ordering::Relaxed);
    }

    pub fn call(&self, status: CallStatus) {
        if let Some(index) = CallStatus::ALL.iter().position(|s| *s == status) {
            if let Some(counter) = self.calls.get(index) {
                counter.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    pub fn decision(&self, approve: bool) {
        let counter = if approve {
            &self.approved
        } else {
            &self.rejected
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an open event stream until the guard is dropped.
    pub fn event_stream(self: &std::sync::Arc<Self>) -> StreamGuard {
        self.event_streams.fetch_add(1, Ordering::Relaxed);
        StreamGuard(self.clone())
    }

    /// The exposition text.
    pub fn render(&self, waiting: usize) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP airlock_http_responses_total HTTP responses by status class."
        );
        let _ = writeln!(out, "# TYPE airlock_http_responses_total counter");
        for (index, counter) in self.responses.iter().enumerate() {
            let _ = writeln!(
                out,
                "airlock_http_responses_total{{class=\"{}xx\"}} {}",
                index + 1,
                counter.load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            out,
            "# HELP airlock_calls_total Calls submitted, by outcome at submission."
        );
        let _ = writeln!(out, "# TYPE airlock_calls_total counter");
        for (status, counter) in CallStatus::ALL.iter().zip(&self.calls) {
            let _ = writeln!(
                out,
                "airlock_calls_total{{outcome=\"{status}\"}} {}",
                counter.load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            out,
            "# HELP airlock_decisions_total Approvals decided by a person."
        );
        let _ = writeln!(out, "# TYPE airlock_decisions_total counter");
        for (verdict, counter) in [("approve", &self.approved), ("reject", &self.rejected)] {
            let _ = writeln!(
                out,
                "airlock_decisions_total{{decision=\"{verdict}\"}} {}",
                counter.load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            out,
            "# HELP airlock_waiting_callers Callers long-polling for a verdict."
        );
        let _ = writeln!(out, "# TYPE airlock_waiting_callers gauge");
        let _ = writeln!(out, "airlock_waiting_callers {waiting}");
        let _ = writeln!(
            out,
            "# HELP airlock_event_streams Open workspace event streams."
        );
        let _ = writeln!(out, "# TYPE airlock_event_streams gauge");
        let _ = writeln!(
            out,
            "airlock_event_streams {}",
            self.event_streams.load(Ordering::Relaxed)
        );
        out
    }
}

/// Decrements the open-streams gauge when the stream ends.
#[derive(Debug)]
pub struct StreamGuard(std::sync::Arc<Metrics>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0.event_streams.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Middleware: counts every response by status class.
pub async fn track(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    state.metrics.response(response.status());
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_show_up_in_the_text() {
        let metrics = Metrics::default();
        metrics.response(StatusCode::CREATED);
        metrics.response(StatusCode::CONFLICT);
        metrics.call(CallStatus::Pending);
        metrics.decision(true);
        let text = metrics.render(3);
        assert!(text.contains("airlock_http_responses_total{class=\"2xx\"} 1"));
        assert!(text.contains("airlock_http_responses_total{class=\"4xx\"} 1"));
        assert!(text.contains("airlock_calls_total{outcome=\"pending\"} 1"));
        assert!(text.contains("airlock_decisions_total{decision=\"approve\"} 1"));
        assert!(text.contains("airlock_waiting_callers 3"));
    }
}
