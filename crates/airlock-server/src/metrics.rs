//! Prometheus counters, hand-rolled on atomics: responses by status class, calls by
//! outcome at submission, decisions by verdict, how long people took to decide
//! (`airlock_approval_wait_seconds`, a histogram), open event streams; the number of
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
    /// Per bucket of [`WAIT_BUCKETS`] (not cumulative), then the overflow.
    wait_buckets: [AtomicU64; WAIT_BUCKETS.len() + 1],
    wait_count: AtomicU64,
    wait_sum_millis: AtomicU64,
}

/// The upper bounds of the wait histogram's buckets, in seconds: a person answers in
/// seconds at a desk, in hours from a phone, within the default deadline of a day.
pub const WAIT_BUCKETS: [f64; 12] = [
    1.0, 5.0, 15.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 86400.0,
];

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

    /// Observes how long an approval waited for a person's decision.
    pub fn approval_wait(&self, seconds: f64) {
        let index = WAIT_BUCKETS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(WAIT_BUCKETS.len());
        if let Some(bucket) = self.wait_buckets.get(index) {
            bucket.fetch_add(1, Ordering::Relaxed);
        }
        self.wait_count.fetch_add(1, Ordering::Relaxed);
        // Whole milliseconds: a wait is never negative nor anywhere near u64's range.
        let millis = (seconds.max(0.0) * 1000.0).round() as u64;
        self.wait_sum_millis.fetch_add(millis, Ordering::Relaxed);
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
            "# HELP airlock_approval_wait_seconds How long approvals waited for a person's decision."
        );
        let _ = writeln!(out, "# TYPE airlock_approval_wait_seconds histogram");
        let mut cumulative = 0u64;
        for (bound, bucket) in WAIT_BUCKETS.iter().zip(&self.wait_buckets) {
            cumulative += bucket.load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "airlock_approval_wait_seconds_bucket{{le=\"{bound}\"}} {cumulative}"
            );
        }
        let count = self.wait_count.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "airlock_approval_wait_seconds_bucket{{le=\"+Inf\"}} {count}"
        );
        let sum = self.wait_sum_millis.load(Ordering::Relaxed) as f64 / 1000.0;
        let _ = writeln!(out, "airlock_approval_wait_seconds_sum {sum}");
        let _ = writeln!(out, "airlock_approval_wait_seconds_count {count}");
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
        assert!(text.contains("airlock_approval_wait_seconds_count 0"));
    }

    #[test]
    fn waits_fill_cumulative_buckets() {
        let metrics = Metrics::default();
        metrics.approval_wait(0.5);
        metrics.approval_wait(45.0);
        metrics.approval_wait(200_000.0);
        let text = metrics.render(0);
        assert!(
            text.contains("airlock_approval_wait_seconds_bucket{le=\"1\"} 1"),
            "{text}"
        );
        assert!(text.contains("airlock_approval_wait_seconds_bucket{le=\"30\"} 1"));
        assert!(text.contains("airlock_approval_wait_seconds_bucket{le=\"60\"} 2"));
        assert!(text.contains("airlock_approval_wait_seconds_bucket{le=\"86400\"} 2"));
        assert!(text.contains("airlock_approval_wait_seconds_bucket{le=\"+Inf\"} 3"));
        assert!(text.contains("airlock_approval_wait_seconds_sum 200045.5"));
        assert!(text.contains("airlock_approval_wait_seconds_count 3"));
    }
}
