//! Resuming a run's journal stream (`GET /v1/runs/{id}/events`) at or after its last
//! event: on an ended run the stream ends at once, as the docs say, instead of sending
//! keep-alives for ever (audit C, M11); past the last event is 422.

use super::support::{runtime_server, say, scripted_agent, until_state};
use crate::support::SseReader;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_run_resumed_at_or_after_its_last_event_ends_at_once() {
    let server = runtime_server().await;
    let agent = scripted_agent(&server, "clocky").await;
    let run_id = say(&server, &agent.session, "what #time is it").await;
    let run = until_state(&server, &run_id, "completed").await;
    let last = run["last_seq"].as_u64().unwrap();
    assert!(last > 1, "{run}");
    let path = format!("/v1/runs/{run_id}/events");

    // One before the end: the last event, then the end.
    let mut reader = SseReader::open_path(
        &server,
        &server.owner_token,
        &format!("{path}?after={}", last - 1),
        None,
    )
    .await;
    let events = reader.read_to_end().await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].kind.as_deref(), Some("run_completed"));

    // At the end, by query or by Last-Event-ID: no event, and the stream ends.
    let mut reader = SseReader::open_path(
        &server,
        &server.owner_token,
        &format!("{path}?after={last}"),
        None,
    )
    .await;
    assert!(reader.read_to_end().await.is_empty());
    let mut reader = SseReader::open_path(&server, &server.owner_token, &path, Some(last)).await;
    assert!(reader.read_to_end().await.is_empty());

    // Past the end: the client cannot have seen that event.
    for request in [
        server.client.request(
            reqwest::Method::GET,
            &format!("{path}?after={}", last + 87),
            Some(&server.owner_token),
        ),
        server
            .client
            .request(reqwest::Method::GET, &path, Some(&server.owner_token))
            .header("Last-Event-ID", (last + 1).to_string()),
    ] {
        let reply = server.client.send(request).await.unwrap();
        assert_eq!(reply.status, 422, "{}", reply.text);
        assert!(
            reply.text.contains("past the run's last event"),
            "{}",
            reply.text
        );
    }
}
