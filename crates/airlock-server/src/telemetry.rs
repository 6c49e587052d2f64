//! OpenTelemetry traces of the gate's decisions (issue 20, DESIGN.md §11.7).
//!
//! Configured by the standard environment variables: traces are exported over OTLP/HTTP
//! (protobuf) when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`
//! is set, unless `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. The SDK reads
//! the rest itself (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_BSP_*`,
//! `OTEL_TRACES_SAMPLER`). With none of them set, [`Telemetry`] is disabled: no span is
//! made, nothing is stored, nothing is exported; each call pays one branch.
//!
//! What is recorded:
//! - one span `airlock.call` per call submitted (`POST /v1/calls`, the hook endpoints),
//!   a child of the caller's span when the request carries a W3C `traceparent`, with
//!   the tool, native tool, decision, decided_by, rule, approval id, wait and the GenAI
//!   attributes `gen_ai.tool.name` and `gen_ai.tool.call.id`;
//! - a person's wait, which can last hours, as its own span `airlock.approval.wait`
//!   (from the approval's creation to its decision) that *links* to the call's span,
//!   instead of a span held open for hours: OpenTelemetry's guidance for work that
//!   finishes long after, or outside, the operation that caused it. The call's
//!   `traceparent` is kept in the store (`approval_traces`) so that whichever node
//!   records the decision can link to it;
//! - the histogram `airlock_approval_wait_seconds` in `/metrics` (always, even with
//!   export off; see `metrics.rs`).
//!
//! INVARIANT: telemetry never slows or fails a decision. Spans are handed to the SDK's
//! batch processor, whose queue is bounded (a full queue drops spans) and which exports
//! from its own thread with a timeout; a collector that is down costs a failed export
//! in that thread, never a request's time. Storing an approval's trace context is best
//! effort: its failure is logged, the call is answered.

use crate::AppState;
use airlock_gate::Gate;
use airlock_protocol::{Approval, Call, CallStatus};
use axum::http::HeaderMap;
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{
    Link, Span as _, SpanContext, SpanKind, TraceContextExt, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

/// The span of one call, or nothing when telemetry is off.
pub struct CallSpan(Option<opentelemetry_sdk::trace::Span>);

/// The tracer of this server, or nothing. Cheap to clone.
#[derive(Clone, Default)]
pub struct Telemetry {
    inner: Option<Arc<Inner>>,
}

struct Inner {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.inner.is_some() {
            "Telemetry(on)"
        } else {
            "Telemetry(off)"
        })
    }
}

/// Where traces go: the full OTLP/HTTP traces URL the environment names, if any.
pub fn traces_endpoint(env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let set = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    if set("OTEL_SDK_DISABLED").is_some_and(|value| value.trim().eq_ignore_ascii_case("true")) {
        return None;
    }
    if set("OTEL_TRACES_EXPORTER").is_some_and(|value| value.trim() == "none") {
        return None;
    }
    // The per-signal variable is the URL as is; the general one is a base the signal's
    // path is appended to (OTLP exporter specification).
    set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| {
        set("OTEL_EXPORTER_OTLP_ENDPOINT")
            .map(|base| format!("{}/v1/traces", base.trim().trim_end_matches('/')))
    })
}

impl Telemetry {
    /// Telemetry that records nothing.
    pub fn disabled() -> Telemetry {
        Telemetry::default()
    }

    /// Telemetry as the environment (`env` reads a variable) configures it. Builds the
    /// exporter's blocking HTTP client, so call it outside an async task (or in
    /// `spawn_blocking`).
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Telemetry, String> {
        let Some(endpoint) = traces_endpoint(env) else {
            return Ok(Telemetry::disabled());
        };
        use opentelemetry_otlp::WithExportConfig as _;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(endpoint.clone())
            .build()
            .map_err(|error| format!("OpenTelemetry: cannot build the OTLP exporter: {error}"))?;
        let service = env("OTEL_SERVICE_NAME")
            .filter(|name| !name.trim().is_empty())
            .unwrap_or_else(|| "airlock".into());
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(service)
            .build();
        let provider = SdkTracerProvider::builder()
            .with_resource(resource)
            .with_batch_exporter(exporter)
            .build();
        let tracer = provider.tracer("airlock");
        tracing::info!(%endpoint, "OpenTelemetry: exporting traces over OTLP/HTTP");
        Ok(Telemetry {
            inner: Some(Arc::new(Inner { provider, tracer })),
        })
    }

    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// Exports what is queued now (blocking, bounded by the exporter's timeout). Tests
    /// and shutdown use it; requests never do.
    pub fn flush(&self) {
        if let Some(inner) = &self.inner {
            if let Err(error) = inner.provider.force_flush() {
                tracing::debug!(%error, "OpenTelemetry: flushing failed");
            }
        }
    }

    /// Flushes and stops the exporter (blocking, bounded).
    pub fn shutdown(&self) {
        if let Some(inner) = &self.inner {
            if let Err(error) = inner.provider.shutdown() {
                tracing::debug!(%error, "OpenTelemetry: shutting down failed");
            }
        }
    }

    /// Starts the `airlock.call` span of a request, in the caller's trace when the
    /// request carries a `traceparent`.
    pub fn call_span(&self, headers: &HeaderMap) -> CallSpan {
        let Some(inner) = &self.inner else {
            return CallSpan(None);
        };
        let parent = TraceContextPropagator::new().extract(&Headers(headers));
        let span = inner
            .tracer
            .span_builder("airlock.call")
            .with_kind(SpanKind::Server)
            .start_with_context(&inner.tracer, &parent);
        CallSpan(Some(span))
    }

    /// Ends a call's span with what the gate made of the call. A call that waits for a
    /// person has its span's context kept, for the wait's span to link to.
    pub async fn finish(&self, span: CallSpan, gate: &Gate, call: &Call) {
        let CallSpan(Some(mut span)) = span else {
            return;
        };
        span.set_attributes(call_attributes(call));
        let context = span.span_context().clone();
        span.end();
        if let (Some(approval_id), CallStatus::Pending) = (&call.approval_id, call.status) {
            let traceparent = traceparent(&context);
            if let Err(error) = gate
                .notifications()
                .record_approval_trace(approval_id, &traceparent)
                .await
            {
                tracing::warn!(%error, approval = %approval_id, "OpenTelemetry: the call's trace context could not be kept");
            }
        }
    }

    /// Records a person's wait for `approval` (decided): the `airlock.approval.wait`
    /// span, linked to the call's span when its context was kept.
    pub async fn approval_decided(&self, gate: &Gate, approval: &Approval) {
        let Some(inner) = &self.inner else {
            return;
        };
        let Some(decided_at) = approval.decided_at else {
            return;
        };
        let link = match gate.notifications().approval_trace(&approval.id).await {
            Ok(found) => found.and_then(|text| span_context(&text)),
            Err(error) => {
                tracing::debug!(%error, "OpenTelemetry: the call's trace context could not be read");
                None
            }
        };
        let wait = wait_seconds(approval.created_at, decided_at);
        let mut attributes = vec![
            KeyValue::new("airlock.approval.id", approval.id.clone()),
            KeyValue::new("airlock.call.id", approval.call_id.clone()),
            KeyValue::new("airlock.tool", approval.tool.clone()),
            KeyValue::new("gen_ai.tool.name", approval.tool.clone()),
            KeyValue::new("gen_ai.tool.call.id", approval.call_id.clone()),
            KeyValue::new("airlock.decision", approval.status.as_str()),
            KeyValue::new("airlock.wait_seconds", wait),
        ];
        if let Some(by) = &approval.decided_by {
            attributes.push(KeyValue::new("airlock.decided_by", by.clone()));
        }
        let mut builder = inner
            .tracer
            .span_builder("airlock.approval.wait")
            .with_kind(SpanKind::Internal)
            .with_start_time(SystemTime::from(approval.created_at))
            .with_attributes(attributes);
        if let Some(context) = link {
            builder = builder.with_links(vec![Link::with_context(context)]);
        }
        let mut span = builder.start(&inner.tracer);
        span.add_event_with_timestamp(
            "airlock.approval.decided",
            SystemTime::from(decided_at),
            vec![KeyValue::new("airlock.decision", approval.status.as_str())],
        );
        span.end_with_timestamp(SystemTime::from(decided_at));
    }
}

/// Everything a decision by a person is counted in: the decisions counter, the wait
/// histogram, the wait's span.
pub async fn decided(state: &AppState, approval: &Approval) {
    state
        .metrics
        .decision(approval.status == airlock_protocol::ApprovalStatus::Approved);
    if let Some(decided_at) = approval.decided_at {
        state
            .metrics
            .approval_wait(wait_seconds(approval.created_at, decided_at));
    }
    state
        .telemetry
        .approval_decided(&state.gate, approval)
        .await;
}

fn wait_seconds(from: jiff::Timestamp, to: jiff::Timestamp) -> f64 {
    let millis = to
        .as_millisecond()
        .saturating_sub(from.as_millisecond())
        .max(0);
    // Milliseconds as f64 are exact far beyond any deadline.
    millis as f64 / 1000.0
}

fn call_attributes(call: &Call) -> Vec<KeyValue> {
    let mut attributes = vec![
        KeyValue::new("airlock.call.id", call.id.clone()),
        KeyValue::new("airlock.agent.id", call.agent_id.clone()),
        KeyValue::new("airlock.tool", call.tool.clone()),
        KeyValue::new("gen_ai.tool.name", call.tool.clone()),
        KeyValue::new("gen_ai.tool.call.id", call.id.clone()),
        KeyValue::new("airlock.risk", call.risk.as_str()),
        KeyValue::new("airlock.decision", call.status.to_string()),
        KeyValue::new("airlock.decided_by", snake_case(&call.decided_by)),
    ];
    if let Some(native) = &call.native_tool {
        attributes.push(KeyValue::new("airlock.native_tool", native.clone()));
    }
    if let Some(rule) = &call.rule {
        attributes.push(KeyValue::new("airlock.rule", rule.clone()));
    }
    if let Some(approval) = &call.approval_id {
        attributes.push(KeyValue::new("airlock.approval.id", approval.clone()));
        if let Some(decided_at) = call.decided_at {
            attributes.push(KeyValue::new(
                "airlock.wait_seconds",
                wait_seconds(call.created_at, decided_at),
            ));
        }
    }
    attributes
}

/// An enum as its JSON name (`policy_default`, `human`…), the words the API uses.
fn snake_case<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => String::new(),
    }
}

/// A span's W3C `traceparent`.
fn traceparent(context: &SpanContext) -> String {
    format!(
        "00-{}-{}-{:02x}",
        context.trace_id(),
        context.span_id(),
        context.trace_flags().to_u8()
    )
}

/// The span a stored `traceparent` names, if it is valid.
fn span_context(traceparent: &str) -> Option<SpanContext> {
    let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
    let context: Context = TraceContextPropagator::new().extract(&carrier);
    let span = context.span().span_context().clone();
    span.is_valid().then_some(span)
}

/// Request headers as the propagator reads them.
struct Headers<'h>(&'h HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|name| name.as_str()).collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_follows_the_standard_variables() {
        let with = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| (*value).to_owned())
            }
        };
        assert_eq!(traces_endpoint(&with(&[])), None);
        assert_eq!(
            traces_endpoint(&with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")])),
            Some("http://c:4318/v1/traces".into())
        );
        assert_eq!(
            traces_endpoint(&with(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/x"),
            ])),
            Some("http://t:1/x".into())
        );
        assert_eq!(
            traces_endpoint(&with(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_SDK_DISABLED", "true"),
            ])),
            None
        );
        assert_eq!(
            traces_endpoint(&with(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_TRACES_EXPORTER", "none"),
            ])),
            None
        );
    }

    #[test]
    fn traceparents_round_trip() {
        let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let context = span_context(text).unwrap();
        assert_eq!(traceparent(&context), text);
        assert!(span_context("00-00000000000000000000000000000000-00f067aa0ba902b7-01").is_none());
        assert!(span_context("garbage").is_none());
    }

    #[test]
    fn disabled_telemetry_makes_no_span() {
        let telemetry = Telemetry::disabled();
        assert!(!telemetry.is_enabled());
        assert!(telemetry.call_span(&HeaderMap::new()).0.is_none());
    }
}
