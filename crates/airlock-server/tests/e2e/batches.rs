//! Deciding several approvals at once (DESIGN.md §11.6): `POST /v1/approvals/decisions`.
//! Each item stands alone — a wrong digest, an unknown id, one already decided, a bad
//! reason or an edit the policy denies refuses that item alone, with its own problem, and
//! writes nothing for it — and racing batches and single decisions decide each approval
//! exactly once. Runs on SQLite, and on PostgreSQL with `AIRLOCK_TEST_BACKEND=postgres`.

use crate::support::{ask, audit_records, decide, server, PATIENCE};
use airlock_protocol::Role;
use airlock_testkit::{Reply, TestServer};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant};

async fn batch(server: &TestServer, token: &str, items: Value) -> Reply {
    server
        .client
        .post("/v1/approvals/decisions", token, &json!({ "items": items }))
        .await
        .unwrap()
}

async fn get(server: &TestServer, path: &str) -> Value {
    server
        .client
        .get(path, &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap()
}

fn item(approval: &Value, decision: &str) -> Value {
    json!({"id": approval["id"], "binding_digest": approval["binding_digest"], "decision": decision})
}

/// Decision records (approved or rejected) of one approval in the audit chain.
fn decisions_of(records: &[Value], id: &Value) -> usize {
    records
        .iter()
        .filter(|r| &r["subject"] == id)
        .filter(|r| r["kind"] == "approval.approved" || r["kind"] == "approval.rejected")
        .count()
}

#[tokio::test]
async fn each_item_of_a_batch_stands_alone() {
    let (server, agent) = server().await;
    let (_, decided) = ask(&server, &agent, "early@acme.test").await;
    let (_, stale) = ask(&server, &agent, "stale@acme.test").await;
    decide(&server, &server.owner_token, &decided, "reject")
        .await
        .expect_status(200)
        .unwrap();
    // A new policy (which makes `stale` stale) with a deny rule for one address, so that
    // an edit can be denied.
    let policy = crate::support::POLICY.to_owned()
        + "\n[[rules]]\ntool = \"email.send\"\ndecision = \"deny\"\nreason = \"no mail to mallory\"\nwhen = { to = { eq = \"mallory@acme.test\" } }\n";
    server.put_policy(&policy).await.unwrap();
    let mut fresh = Vec::new();
    for n in 0..6 {
        fresh.push(ask(&server, &agent, &format!("p{n}@acme.test")).await.1);
    }
    let [good, wrong, rejected, edited, denied_edit, long_reason] =
        <[Value; 6]>::try_from(fresh).unwrap();
    let before = audit_records(&server).await;

    let mut wrong_item = item(&wrong, "approve");
    wrong_item["binding_digest"] = "0".repeat(64).into();
    let mut rejected_item = item(&rejected, "reject");
    rejected_item["reason"] = "not today".into();
    let mut edited_item = item(&edited, "approve");
    edited_item["arguments"] = json!({"to": "carol@acme.test", "body": "checked"});
    let mut denied_item = item(&denied_edit, "approve");
    denied_item["arguments"] = json!({"to": "mallory@acme.test", "body": "hello"});
    let mut long_item = item(&long_reason, "approve");
    long_item["reason"] = "x".repeat(2001).into();
    let items = json!([
        item(&good, "approve"),
        wrong_item,
        json!({"id": "apr_nobody_has_this", "binding_digest": "0".repeat(64), "decision": "approve"}),
        item(&decided, "approve"),
        item(&stale, "approve"),
        rejected_item,
        edited_item,
        denied_item,
        long_item,
        // The same approval twice: the first decides it, the second is too late.
        item(&good, "reject"),
    ]);
    let reply = batch(&server, &server.owner_token, items)
        .await
        .expect_status(200)
        .unwrap();
    let results = reply["results"].as_array().unwrap();
    assert_eq!(results.len(), 10, "{reply}");
    let outcome = |i: usize| -> String {
        let result = &results[i];
        match result["status"].as_str() {
            Some(status) => status.to_owned(),
            None => result["problem"]["type"].as_str().unwrap().to_owned(),
        }
    };
    let expected = [
        "approved",
        "binding_mismatch",
        "not_found",
        "already_decided",
        "stale_policy",
        "rejected",
        "approved",
        "edit_denied",
        "invalid",
        "already_decided",
    ];
    for (i, expected) in expected.iter().enumerate() {
        assert_eq!(outcome(i), *expected, "item {i}: {}", results[i]);
    }
    // Ids come back in the items' order, and each problem is a whole problem.
    assert_eq!(results[0]["id"], good["id"]);
    assert_eq!(results[2]["id"], "apr_nobody_has_this");
    assert_eq!(results[1]["problem"]["status"], 409);
    assert!(results[8]["problem"]["detail"]
        .as_str()
        .unwrap()
        .contains("2000"));
    assert!(results[0].get("problem").is_none(), "{}", results[0]);

    // What was refused is exactly as it was; what was decided is decided once.
    for refused in [&wrong, &denied_edit, &long_reason] {
        let now = get(
            &server,
            &format!("/v1/approvals/{}", refused["id"].as_str().unwrap()),
        )
        .await;
        assert_eq!(&now, refused);
    }
    let after = audit_records(&server).await;
    let new: Vec<Value> = after[before.len()..].to_vec();
    for (approval, count) in [
        (&good, 1),
        (&rejected, 1),
        (&edited, 1),
        (&wrong, 0),
        (&denied_edit, 0),
        (&long_reason, 0),
        (&decided, 0),
        (&stale, 0),
    ] {
        assert_eq!(decisions_of(&new, &approval["id"]), count, "{approval}");
    }
    assert_eq!(
        new.len(),
        3,
        "only the three decisions were written: {new:?}"
    );
    let edit = new.iter().find(|r| r["subject"] == edited["id"]).unwrap();
    assert_eq!(edit["data"]["edit"]["changed"], json!(["body", "to"]));
    let rejected_now = get(
        &server,
        &format!("/v1/approvals/{}", rejected["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(rejected_now["decision_reason"], "not today");
    let verify = get(&server, "/v1/audit/verify").await;
    assert_eq!(verify["ok"], true, "{verify}");
}

#[tokio::test]
async fn a_batch_is_refused_whole_only_when_its_body_or_its_caller_is() {
    let (server, agent) = server().await;
    let (_, approval) = ask(&server, &agent, "bob@acme.test").await;
    let (_, viewer) = server.create_user("vera", Role::Viewer).await.unwrap();
    let before = audit_records(&server).await;

    let reply = batch(&server, &server.owner_token, json!([])).await;
    assert_eq!(reply.status, 422, "{}", reply.text);
    assert!(reply.text.contains("1 to 1000"), "{}", reply.text);
    let many: Vec<Value> = (0..1001).map(|_| item(&approval, "approve")).collect();
    let reply = batch(&server, &server.owner_token, Value::Array(many)).await;
    assert_eq!(reply.status, 422, "{}", reply.text);
    let mut odd = item(&approval, "approve");
    odd["remember"] = json!({"scope": "agent"});
    let reply = batch(&server, &server.owner_token, json!([odd])).await;
    assert_eq!(reply.status, 422, "{}", reply.text);
    assert!(reply.text.contains("remember"), "{}", reply.text);
    let reply = batch(
        &server,
        &server.owner_token,
        json!([{"id": approval["id"], "decision": "approve"}]),
    )
    .await;
    assert_eq!(reply.status, 422, "{}", reply.text);
    let reply = server
        .client
        .post("/v1/approvals/decisions", &server.owner_token, &json!({}))
        .await
        .unwrap();
    assert_eq!(reply.status, 422, "{}", reply.text);
    for token in [&viewer, &agent] {
        let reply = batch(&server, token, json!([item(&approval, "approve")])).await;
        assert_eq!(reply.status, 403, "{}", reply.text);
        assert_eq!(reply.problem_type(), "forbidden");
    }

    assert_eq!(audit_records(&server).await, before);
    let now = get(
        &server,
        &format!("/v1/approvals/{}", approval["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(now, approval);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_batches_racing_single_decisions_decide_each_approval_once() {
    let (server, agent) = server().await;
    let mut approvals = Vec::new();
    for n in 0..10 {
        approvals.push(ask(&server, &agent, &format!("race{n}@acme.test")).await.1);
    }
    let mut tasks = Vec::new();
    for i in 0..200 {
        let client = server.client.clone();
        let token = server.owner_token.clone();
        let approvals = approvals.clone();
        tasks.push(tokio::spawn(async move {
            let verdict = if i % 3 == 0 { "reject" } else { "approve" };
            if i % 2 == 0 {
                // A batch of every approval, starting at a different one each time.
                let items: Vec<Value> = (0..approvals.len())
                    .map(|k| item(&approvals[(i + k) % approvals.len()], verdict))
                    .collect();
                let reply = client
                    .post(
                        "/v1/approvals/decisions",
                        &token,
                        &json!({ "items": items }),
                    )
                    .await
                    .unwrap();
                assert_eq!(reply.status, 200, "{}", reply.text);
                let value: Value = serde_json::from_str(&reply.text).unwrap();
                value["results"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| {
                        let outcome = r["status"]
                            .as_str()
                            .or_else(|| r["problem"]["type"].as_str())
                            .unwrap()
                            .to_owned();
                        (r["id"].as_str().unwrap().to_owned(), outcome)
                    })
                    .collect::<Vec<_>>()
            } else {
                let approval = &approvals[i % approvals.len()];
                let id = approval["id"].as_str().unwrap();
                let reply = client
                    .post(
                        &format!("/v1/approvals/{id}/decision"),
                        &token,
                        &json!({"decision": verdict, "binding_digest": approval["binding_digest"]}),
                    )
                    .await
                    .unwrap();
                let outcome = match reply.status.as_u16() {
                    200 => serde_json::from_str::<Value>(&reply.text).unwrap()["status"]
                        .as_str()
                        .unwrap()
                        .to_owned(),
                    409 => reply.problem_type().to_owned(),
                    other => panic!("unexpected {other}: {}", reply.text),
                };
                vec![(id.to_owned(), outcome)]
            }
        }));
    }
    let mut wins: HashMap<String, Vec<String>> = HashMap::new();
    for task in tasks {
        for (id, outcome) in task.await.unwrap() {
            match outcome.as_str() {
                "approved" | "rejected" => wins.entry(id).or_default().push(outcome),
                "already_decided" => {}
                other => panic!("{id}: unexpected outcome {other}"),
            }
        }
    }
    let records = audit_records(&server).await;
    for approval in &approvals {
        let id = approval["id"].as_str().unwrap();
        let won = wins.get(id).cloned().unwrap_or_default();
        assert_eq!(won.len(), 1, "{id} was decided {} times", won.len());
        assert_eq!(decisions_of(&records, &approval["id"]), 1, "{id}");
        let now = get(&server, &format!("/v1/approvals/{id}")).await;
        assert_eq!(now["status"], won[0], "{id}");
    }
    let verify = get(&server, "/v1/audit/verify").await;
    assert_eq!(verify["ok"], true, "{verify}");
}

/// A scripted model whose one turn asks for two emails at once, then finishes.
const TWO_MAILS: &str = r##"
[[scenario]]
marker = "#two"
[[scenario.turn]]
events = [
  { type = "tool_use", name = "email.send", arguments = { to = "ann@acme.test", subject = "Hi", body = "one" } },
  { type = "tool_use", name = "email.send", arguments = { to = "ben@acme.test", subject = "Hi", body = "two" } },
]
[[scenario.turn]]
events = [{ type = "text", text = "both sent" }]
"##;

#[tokio::test]
async fn the_approvals_of_one_run_are_listed_and_decided_together_and_the_run_goes_on() {
    let (server, _) = server().await;
    let scenarios = server.data_dir().join("two.scenarios.toml");
    std::fs::write(&scenarios, TWO_MAILS).unwrap();
    let llm = json!({"base_url": format!("scripted:{}", scenarios.display()), "model": "script"});
    let created = server
        .client
        .post(
            "/v1/agents",
            &server.owner_token,
            &json!({"name": "writer", "llm": llm, "system_prompt": "test"}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    let session = server
        .client
        .post(
            "/v1/sessions",
            &server.owner_token,
            &json!({"agent_id": created["agent"]["id"]}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    let session_id = session["id"].as_str().unwrap();
    let started = server
        .client
        .post(
            &format!("/v1/sessions/{session_id}/messages"),
            &server.owner_token,
            &json!({"text": "#two"}),
        )
        .await
        .unwrap()
        .expect_status(202)
        .unwrap();
    let run = started["run_id"].as_str().unwrap().to_owned();
    let pending = until(&server, |server| {
        let run = run.clone();
        async move {
            let page = get(
                server,
                &format!("/v1/approvals?status=pending&run_id={run}"),
            )
            .await;
            let items = page["items"].as_array().unwrap().clone();
            (items.len() == 2).then_some(items)
        }
    })
    .await;
    let mut recipients: Vec<&str> = pending
        .iter()
        .map(|a| a["preview"]["arguments"]["to"].as_str().unwrap())
        .collect();
    recipients.sort();
    assert_eq!(recipients, ["ann@acme.test", "ben@acme.test"]);
    // Another run's approvals, and approvals of no run, are not this run's.
    let (_, lone) = ask(
        &server,
        &server.create_agent("lone").await.unwrap().1,
        "x@acme.test",
    )
    .await;
    let page = get(&server, &format!("/v1/approvals?run_id={run}")).await;
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    assert!(!page["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["id"] == lone["id"]));
    let missing = server
        .client
        .get(
            "/v1/approvals?run_id=run_nobody_has_this",
            &server.owner_token,
        )
        .await
        .unwrap();
    assert_eq!(missing.status, 404, "{}", missing.text);

    let items: Vec<Value> = pending.iter().map(|a| item(a, "approve")).collect();
    let reply = batch(&server, &server.owner_token, Value::Array(items))
        .await
        .expect_status(200)
        .unwrap();
    assert!(
        reply["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == "approved"),
        "{reply}"
    );
    let state = until(&server, |server| {
        let run = run.clone();
        async move {
            let view = get(server, &format!("/v1/runs/{run}")).await;
            (view["state"] == "completed").then_some(view)
        }
    })
    .await;
    assert_eq!(state["state"], "completed");
    let outbox = get(&server, "/v1/outbox").await;
    let mut sent: Vec<&str> = outbox["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["recipient"].as_str().unwrap())
        .collect();
    sent.sort();
    assert_eq!(sent, ["ann@acme.test", "ben@acme.test"]);
}

/// Polls `probe` until it yields, within [`PATIENCE`].
async fn until<'a, T, F, Fut>(server: &'a TestServer, probe: F) -> T
where
    F: Fn(&'a TestServer) -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(value) = probe(server).await {
            return value;
        }
        assert!(start.elapsed() < PATIENCE, "the condition never held");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
