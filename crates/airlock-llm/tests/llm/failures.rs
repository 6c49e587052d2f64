//! Failed turns: retries and backoff, final statuses, malformed answers, timeouts, cut
//! connections.

use std::time::{Duration, Instant};

use airlock_llm::fake::{FakeOpenAi, FakeReply};
use airlock_llm::{ClientOptions, LlmConfig, LlmError, OpenAiClient};

use super::harness::{client, complete, config, fast_options, request};

#[tokio::test]
async fn a_500_then_success_succeeds_after_one_retry() {
    let fake = FakeOpenAi::start().await;
    fake.push(FakeReply::Status(500, "boom".into()));
    fake.push(FakeReply::Text("recovered".into()));
    let (completion, deltas) = complete(&client(&fake, false), &request("hi")).await;
    assert_eq!(completion.unwrap().text.as_deref(), Some("recovered"));
    assert_eq!(deltas, ["recovered"]);
    assert_eq!(fake.requests().len(), 2);
    assert_eq!(
        fake.requests()[0],
        fake.requests()[1],
        "the retry sends the same body"
    );
}

#[tokio::test]
async fn a_429_waits_for_retry_after() {
    let fake = FakeOpenAi::start().await;
    let rate_limited = FakeReply::Status(429, r#"{"error":{"message":"slow down"}}"#.into());
    fake.push(FakeReply::WithHeaders(
        vec![("retry-after".into(), "1".into())],
        Box::new(rate_limited),
    ));
    fake.push(FakeReply::Text("ok".into()));
    let started = Instant::now();
    let (completion, _) = complete(&client(&fake, true), &request("hi")).await;
    assert_eq!(completion.unwrap().text.as_deref(), Some("ok"));
    // The backoff alone would wait about 10 ms.
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn a_400_is_final() {
    let fake = FakeOpenAi::start().await;
    fake.push(FakeReply::Status(
        400,
        r#"{"error":{"message":"bad tool schema"}}"#.into(),
    ));
    fake.push(FakeReply::Text("never served".into()));
    let (result, _) = complete(&client(&fake, false), &request("hi")).await;
    match result {
        Err(LlmError::Status { status: 400, body }) => assert!(body.contains("bad tool schema")),
        other => panic!("expected a 400 Status error, got {other:?}"),
    }
    assert_eq!(fake.requests().len(), 1);
    assert_eq!(fake.pending(), 1);
}

#[tokio::test]
async fn exhausted_retries_return_the_last_status() {
    let fake = FakeOpenAi::start().await;
    for _ in 0..4 {
        fake.push(FakeReply::Status(503, "x".repeat(2_000)));
    }
    fake.push(FakeReply::Text("one retry too many".into()));
    let (result, _) = complete(&client(&fake, false), &request("hi")).await;
    match result {
        Err(LlmError::Status { status: 503, body }) => {
            assert!(
                body.chars().count() <= 501,
                "truncated body: {}",
                body.len()
            );
        }
        other => panic!("expected a 503 Status error, got {other:?}"),
    }
    assert_eq!(
        fake.requests().len(),
        4,
        "one try and max_retries = 3 retries"
    );
    assert_eq!(fake.pending(), 1);
}

/// The error of one turn against a single queued `reply`, which must not be retried.
async fn malformed(reply: FakeReply, stream: bool) -> String {
    let fake = FakeOpenAi::start().await;
    fake.push(reply);
    let (result, _) = complete(&client(&fake, stream), &request("hi")).await;
    assert_eq!(
        fake.requests().len(),
        1,
        "a malformed answer is not retried"
    );
    match result {
        Err(LlmError::Malformed(message)) => message,
        other => panic!("expected Malformed, got {other:?}"),
    }
}

#[tokio::test]
async fn malformed_answers_are_named() {
    let not_json = malformed(FakeReply::Raw("not json".into()), false).await;
    assert!(not_json.contains("not valid JSON"), "{not_json}");
    let no_choices = malformed(FakeReply::Raw(r#"{"id":"x","choices":[]}"#.into()), false).await;
    assert_eq!(no_choices, "the response has no choices");
    let nameless = r#"{"choices":[{"message":{"tool_calls":[{"id":"c","type":"function","function":{"arguments":"{}"}}]}}]}"#;
    let nameless = malformed(FakeReply::Raw(nameless.into()), false).await;
    assert_eq!(nameless, "tool call 0 has no function name");
}

#[tokio::test]
async fn sse_garbage_is_malformed() {
    let garbage = malformed(FakeReply::Raw("data: {this is not json\n\n".into()), true).await;
    assert!(garbage.contains("not a valid chunk"), "{garbage}");
    let no_events = malformed(FakeReply::Raw("<html>oops</html>".into()), true).await;
    assert_eq!(no_events, "the event stream has no data lines");
}

#[tokio::test]
async fn a_slow_server_times_out_after_the_retries() {
    let fake = FakeOpenAi::start().await;
    for _ in 0..2 {
        fake.push(FakeReply::Delay(
            Duration::from_secs(2),
            Box::new(FakeReply::Text("late".into())),
        ));
    }
    let options = ClientOptions {
        idle_timeout: Duration::from_millis(200),
        max_retries: 1,
        backoff: Duration::from_millis(10),
    };
    let client = OpenAiClient::new(&config(&fake, false), options).unwrap();
    let started = Instant::now();
    let (result, _) = complete(&client, &request("hi")).await;
    assert!(matches!(result, Err(LlmError::Timeout(_))), "{result:?}");
    assert!(
        started.elapsed() < Duration::from_millis(1_500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(fake.requests().len(), 2, "a timeout is retried");
}

/// A slow model that keeps streaming (a local model on a CPU) is never cut off, however
/// long its answer takes; only silence counts against the timeout.
#[tokio::test]
async fn a_stream_longer_than_the_timeout_is_read_while_it_keeps_coming() {
    for stream in [true, false] {
        let fake = FakeOpenAi::start().await;
        // Ten chunks 100 ms apart: a second in all, five times the timeout.
        let pieces: Vec<String> = (0..10).map(|n| format!("{n} ")).collect();
        fake.push(FakeReply::Paced(
            Duration::from_millis(100),
            Box::new(FakeReply::TextInPieces(pieces.clone())),
        ));
        let options = ClientOptions {
            idle_timeout: Duration::from_millis(400),
            max_retries: 0,
            backoff: Duration::from_millis(10),
        };
        let client = OpenAiClient::new(&config(&fake, stream), options).unwrap();
        let (result, deltas) = complete(&client, &request("hi")).await;
        let completion = result.unwrap_or_else(|error| panic!("stream={stream}: {error}"));
        assert_eq!(completion.text.unwrap(), pieces.concat(), "stream={stream}");
        if stream {
            assert_eq!(deltas, pieces);
        }
    }
}

/// A stream that goes silent in the middle of its answer is given up on after the idle
/// timeout, not after the whole answer's time.
#[tokio::test]
async fn a_stream_silent_for_the_idle_timeout_times_out() {
    let fake = FakeOpenAi::start().await;
    fake.push(FakeReply::Paced(
        Duration::from_millis(1_000),
        Box::new(FakeReply::Text("slow".into())),
    ));
    let options = ClientOptions {
        idle_timeout: Duration::from_millis(200),
        max_retries: 0,
        backoff: Duration::from_millis(10),
    };
    let client = OpenAiClient::new(&config(&fake, true), options).unwrap();
    let started = Instant::now();
    let (result, _) = complete(&client, &request("hi")).await;
    let error = result.unwrap_err();
    assert!(matches!(error, LlmError::Timeout(_)), "{error:?}");
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
}

/// A body that ends cleanly before its answer does (a close-delimited body ends with the
/// connection's FIN) was cut, not malformed: retried when nothing was shown yet.
#[tokio::test]
async fn a_body_that_ends_early_is_retried_before_any_delta() {
    for stream in [true, false] {
        let fake = FakeOpenAi::start().await;
        fake.push(FakeReply::EndsEarly(Box::new(FakeReply::ToolCalls(vec![
            (
                "email_send".into(),
                serde_json::json!({"to": "bob@example.com"}),
            ),
        ]))));
        fake.push(FakeReply::Text("whole".into()));
        let (completion, deltas) = complete(&client(&fake, stream), &request("hi")).await;
        let completion = completion.unwrap_or_else(|error| panic!("stream={stream}: {error}"));
        assert_eq!(completion.text.as_deref(), Some("whole"));
        assert_eq!(deltas.concat(), "whole");
        assert_eq!(fake.requests().len(), 2, "stream={stream}");
    }
}

/// Text already shown is never shown twice: a stream that ends early after some text
/// fails the turn instead of retrying it.
#[tokio::test]
async fn a_stream_that_ends_early_after_text_is_not_retried() {
    let fake = FakeOpenAi::start().await;
    fake.push(FakeReply::EndsEarly(Box::new(FakeReply::Text(
        "partial answer".into(),
    ))));
    fake.push(FakeReply::Text("must not be shown".into()));
    let (result, deltas) = complete(&client(&fake, true), &request("hi")).await;
    let error = result.unwrap_err();
    assert!(matches!(error, LlmError::Transport(_)), "{error:?}");
    assert!(error.to_string().contains("before [DONE]"), "{error}");
    assert_eq!(deltas.concat(), "partial answer");
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn a_cut_connection_is_retried_before_any_delta() {
    let fake = FakeOpenAi::start().await;
    fake.push(FakeReply::CutShort(Box::new(FakeReply::Text(
        "half".into(),
    ))));
    fake.push(FakeReply::Text("whole".into()));
    let (completion, deltas) = complete(&client(&fake, false), &request("hi")).await;
    assert_eq!(completion.unwrap().text.as_deref(), Some("whole"));
    assert_eq!(deltas, ["whole"]);
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn a_stream_cut_after_deltas_is_not_retried() {
    let fake = FakeOpenAi::start().await;
    fake.push(FakeReply::CutShort(Box::new(FakeReply::Text(
        "one two three".into(),
    ))));
    fake.push(FakeReply::Text("must not be shown twice".into()));
    let (result, deltas) = complete(&client(&fake, true), &request("hi")).await;
    assert!(matches!(result, Err(LlmError::Transport(_))), "{result:?}");
    assert_eq!(deltas.concat(), "one two three");
    assert_eq!(fake.requests().len(), 1);
    assert_eq!(fake.pending(), 1);
}

#[tokio::test]
async fn a_refused_connection_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let config = LlmConfig {
        base_url: format!("http://{address}/v1"),
        model: "m".into(),
        api_key_env: None,
        stream: None,
    };
    let options = ClientOptions {
        max_retries: 1,
        ..fast_options()
    };
    let client = OpenAiClient::new(&config, options).unwrap();
    let (result, _) = complete(&client, &request("hi")).await;
    let error = result.unwrap_err();
    assert!(matches!(error, LlmError::Transport(_)), "{error:?}");
    assert!(error.is_retryable());
}
