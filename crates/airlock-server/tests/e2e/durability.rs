//! Durable (G7): pending approvals survive a restart of the server on the same data
//! folder; they stay pending and decidable, tokens still work, and a caller whose
//! long-poll was cut by the shutdown re-polls and gets the verdict.

use crate::support::{ask, decide, server, until_waiting};
use std::time::Instant;

#[tokio::test]
async fn pending_approvals_survive_a_restart_stay_decidable_and_waiters_re_poll() {
    let (mut server, agent) = server().await;
    let (first_call, first) = ask(&server, &agent, "a@acme.test").await;
    let (second_call, second) = ask(&server, &agent, "b@acme.test").await;

    // A caller is long-polling when the server goes down: it is answered, still pending.
    let client = server.client.clone();
    let poll = format!("/v1/calls/{}?wait_s=30", first_call["id"].as_str().unwrap());
    let waiter = {
        let agent = agent.clone();
        let poll = poll.clone();
        tokio::spawn(async move { client.get(&poll, &agent).await.unwrap() })
    };
    until_waiting(&server, 1).await;
    let stopping = Instant::now();
    server.restart().await.unwrap();
    let cut = waiter.await.unwrap();
    assert_eq!(cut.body["status"], "pending", "{}", cut.text);
    assert!(
        stopping.elapsed().as_secs() < 10,
        "shutdown waited for the long-poll"
    );

    let pending = server
        .client
        .get("/v1/approvals?status=pending", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let mut ids: Vec<_> = pending["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].clone())
        .collect();
    ids.sort_by_key(|id| id.to_string());
    let mut expected = vec![first["id"].clone(), second["id"].clone()];
    expected.sort_by_key(|id| id.to_string());
    assert_eq!(ids, expected);

    // The caller re-polls the new server; the decision wakes it.
    let client = server.client.clone();
    let rewaiter = {
        let agent = agent.clone();
        tokio::spawn(async move { client.get(&poll, &agent).await.unwrap() })
    };
    until_waiting(&server, 1).await;
    decide(&server, &server.owner_token, &first, "approve")
        .await
        .expect_status(200)
        .unwrap();
    let woken = rewaiter.await.unwrap();
    assert_eq!(woken.body["status"], "approved", "{}", woken.text);

    decide(&server, &server.owner_token, &second, "reject")
        .await
        .expect_status(200)
        .unwrap();
    let second_call = server
        .client
        .get(
            &format!("/v1/calls/{}", second_call["id"].as_str().unwrap()),
            &agent,
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(second_call["status"], "rejected");

    // The grant is redeemed once, and a second restart does not bring it back.
    let redeem = format!("/v1/calls/{}/redeem", first_call["id"].as_str().unwrap());
    server
        .client
        .post_empty(&redeem, &agent)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    server.restart().await.unwrap();
    let again = server.client.post_empty(&redeem, &agent).await.unwrap();
    assert_eq!(again.status, 409);
    assert_eq!(again.problem_type(), "grant_spent");
    let report = server
        .client
        .get("/v1/audit/verify", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(report["ok"], true, "{report}");
}
