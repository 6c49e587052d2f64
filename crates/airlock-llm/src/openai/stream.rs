//! A streaming answer: Server-Sent Events whose `data:` lines are chunks
//! (`choices[0].delta`), ending with `data: [DONE]`.
//!
//! Text fragments go to `on_delta` as they arrive; tool calls are assembled by their
//! `index`: the id and name come first, the arguments in fragments.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde::Deserialize;
use serde_json::Value;

use super::names::ToolNames;
use super::response::{arguments_text, finish_call, WireCall};
use super::{silent, transport_error};
use crate::{Completion, LlmError};

/// Reads the event stream of `response` to the end (or to `[DONE]`). Sets `delivered` as
/// soon as a text fragment went to `on_delta`, so the caller knows not to retry.
///
/// A stream that ends, cleanly, before `[DONE]` and before any `finish_reason` was cut
/// (a close-delimited body ends with the connection; a proxy may end a chunked one): a
/// transport failure, which the caller retries when nothing was shown yet.
pub(crate) async fn read(
    response: reqwest::Response,
    idle: Duration,
    names: &ToolNames,
    on_delta: &(dyn Fn(&str) + Send + Sync),
    delivered: &AtomicBool,
) -> Result<Completion, LlmError> {
    let mut decoder = SseDecoder::default();
    let mut state = StreamState::default();
    let mut body = response.bytes_stream();
    // A model that keeps streaming may take as long as it needs; one silent for `idle`
    // between two pieces is given up on.
    while let Some(bytes) = tokio::time::timeout(idle, body.next())
        .await
        .map_err(|_elapsed| silent(idle))?
    {
        let bytes = bytes.map_err(|error| match transport_error(&error) {
            LlmError::Transport(message) => {
                LlmError::Transport(format!("the event stream was cut: {message}"))
            }
            other => other,
        })?;
        for data in decoder.feed(&bytes)? {
            state.event(&data, on_delta, delivered)?;
            if state.done {
                // Servers may hold the connection open after [DONE]; do not wait for it.
                return state.finish(names);
            }
        }
    }
    if let Some(data) = decoder.finish()? {
        state.event(&data, on_delta, delivered)?;
    }
    state.finish(names)
}

/// Splits a byte stream into the `data` of each event. Fields other than `data` and
/// comment lines are ignored, as the SSE specification says.
#[derive(Default)]
pub(crate) struct SseDecoder {
    /// Bytes after the last complete line.
    pending: Vec<u8>,
    /// The `data` lines of the event being read, joined by `\n`.
    data: Option<String>,
}

impl SseDecoder {
    /// Feeds the next bytes (cut anywhere); returns the data of every event they complete.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Vec<String>, LlmError> {
        self.pending.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.pending.iter().position(|&byte| byte == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = std::str::from_utf8(&line)
                .map_err(|_| LlmError::Malformed("the event stream is not UTF-8".into()))?;
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                events.extend(self.data.take());
            } else if let Some(value) = line.strip_prefix("data:") {
                let value = value.strip_prefix(' ').unwrap_or(value);
                match &mut self.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => self.data = Some(value.to_owned()),
                }
            }
        }
        Ok(events)
    }

    /// The end of the stream: a last event not followed by a blank line still counts.
    pub(crate) fn finish(&mut self) -> Result<Option<String>, LlmError> {
        // Two line ends close any open line and then the open event; at most one event
        // can be open, so at most one comes out.
        Ok(self.feed(b"\n\n")?.pop())
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<ChunkChoice>>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    index: usize,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireCall>>,
}

/// A tool call being assembled from fragments.
struct PartialCall {
    index: usize,
    id: Option<String>,
    name: Option<String>,
    arguments: String,
}

/// What the chunks so far add up to.
#[derive(Default)]
struct StreamState {
    events: usize,
    saw_choice: bool,
    text: Option<String>,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    done: bool,
}

impl StreamState {
    fn event(
        &mut self,
        data: &str,
        on_delta: &(dyn Fn(&str) + Send + Sync),
        delivered: &AtomicBool,
    ) -> Result<(), LlmError> {
        self.events += 1;
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|error| {
            LlmError::Malformed(format!(
                "an event is not a valid chunk: {error}: {}",
                excerpt(data)
            ))
        })?;
        if let Some(error) = chunk.error {
            return Err(LlmError::Malformed(format!(
                "the event stream carried an error: {error}"
            )));
        }
        // Only the first choice is the turn (airlock never asks for `n > 1`); a usage-only
        // chunk has no choices at all.
        for choice in chunk
            .choices
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.index == 0)
        {
            self.saw_choice = true;
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
            let Some(delta) = choice.delta else { continue };
            if let Some(fragment) = delta.content.filter(|fragment| !fragment.is_empty()) {
                self.text
                    .get_or_insert_with(String::new)
                    .push_str(&fragment);
                delivered.store(true, Ordering::SeqCst);
                on_delta(&fragment);
            }
            for call in delta.tool_calls.unwrap_or_default() {
                self.call_fragment(call);
            }
        }
        Ok(())
    }

    fn call_fragment(&mut self, fragment: WireCall) {
        let id = fragment.id.filter(|id| !id.is_empty());
        // Without an index (some servers), a new id starts a new call and anything else
        // continues the last one.
        let index = fragment
            .index
            .unwrap_or_else(|| match (&id, self.calls.last()) {
                (_, None) => 0,
                (Some(id), Some(last)) if last.id.as_ref() != Some(id) => last.index + 1,
                (_, Some(last)) => last.index,
            });
        let position = match self.calls.iter().position(|call| call.index == index) {
            Some(position) => position,
            None => {
                self.calls.push(PartialCall {
                    index,
                    id: None,
                    name: None,
                    arguments: String::new(),
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[position];
        if call.id.is_none() {
            call.id = id;
        }
        if let Some(function) = fragment.function {
            if call.name.is_none() {
                call.name = function.name.filter(|name| !name.is_empty());
            }
            call.arguments.push_str(&arguments_text(function.arguments));
        }
    }

    fn finish(self, names: &ToolNames) -> Result<Completion, LlmError> {
        if self.events == 0 {
            return Err(LlmError::Malformed(
                "the event stream has no data lines".into(),
            ));
        }
        if !self.done && self.finish_reason.is_none() {
            return Err(LlmError::Transport(
                "the event stream ended before [DONE]".into(),
            ));
        }
        if !self.saw_choice {
            return Err(LlmError::Malformed("the response has no choices".into()));
        }
        let tool_calls = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(position, call)| {
                finish_call(position, call.id, call.name, call.arguments, names)
            })
            .collect::<Result<_, _>>()?;
        Ok(Completion {
            text: self.text,
            tool_calls,
            finish_reason: self.finish_reason,
        })
    }
}

/// The start of an offending event, for an error message.
fn excerpt(data: &str) -> String {
    let mut excerpt: String = data.chars().take(80).collect();
    if excerpt.len() < data.len() {
        excerpt.push('…');
    }
    excerpt
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const STREAM: &str = concat!(
        ": keep-alive\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"email_send\",\"arguments\":\"\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"to\\\":\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"1}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: [DONE]\n\n",
    );

    /// Decodes `stream` fed in pieces of `piece` bytes.
    fn decode(stream: &str, piece: usize) -> (Result<Completion, LlmError>, Vec<String>) {
        let deltas = std::sync::Mutex::new(Vec::new());
        let on_delta = |fragment: &str| deltas.lock().unwrap().push(fragment.to_owned());
        let delivered = AtomicBool::new(false);
        let mut decoder = SseDecoder::default();
        let mut state = StreamState::default();
        let result = (|| {
            for bytes in stream.as_bytes().chunks(piece) {
                for data in decoder.feed(bytes)? {
                    state.event(&data, &on_delta, &delivered)?;
                }
            }
            if let Some(data) = decoder.finish()? {
                state.event(&data, &on_delta, &delivered)?;
            }
            std::mem::take(&mut state).finish(&ToolNames::default())
        })();
        (result, deltas.into_inner().unwrap())
    }

    #[test]
    fn chunks_add_up_whatever_the_byte_boundaries() {
        for piece in [1, 3, 7, 64, STREAM.len()] {
            let (completion, deltas) = decode(STREAM, piece);
            let completion = completion.unwrap();
            assert_eq!(deltas, ["Hel", "lo"], "piece {piece}");
            assert_eq!(completion.text.as_deref(), Some("Hello"));
            assert_eq!(completion.tool_calls.len(), 1);
            assert_eq!(completion.tool_calls[0].id, "c1");
            assert_eq!(completion.tool_calls[0].arguments, r#"{"to":1}"#);
            assert_eq!(completion.finish_reason.as_deref(), Some("tool_calls"));
        }
    }

    #[test]
    fn a_stream_that_stops_before_its_end_was_cut() {
        let (result, deltas) = decode(
            "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n",
            4,
        );
        let error = result.unwrap_err();
        assert!(matches!(error, LlmError::Transport(_)), "{error:?}");
        assert!(error.to_string().contains("before [DONE]"), "{error}");
        assert_eq!(deltas, ["x"]);
    }

    #[test]
    fn a_last_event_without_blank_line_counts() {
        let stream =
            "data: {\"choices\":[{\"delta\":{\"content\":\"x\"},\"finish_reason\":\"stop\"}]}";
        assert_eq!(decode(stream, 5).0.unwrap().text.as_deref(), Some("x"));
    }

    #[test]
    fn bad_streams_are_malformed() {
        let error = |stream| decode(stream, 4).0.unwrap_err().to_string();
        assert!(error("this is not an event stream\n").contains("no data lines"));
        assert!(error("data: {nope\n\n").contains("not a valid chunk"));
        assert!(error("data: {\"choices\":[]}\n\ndata: [DONE]\n\n").contains("no choices"));
        assert!(error("data: {\"error\":{\"message\":\"boom\"}}\n\n").contains("boom"));
    }
}
