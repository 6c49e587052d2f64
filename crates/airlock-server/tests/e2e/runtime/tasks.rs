//! Scheduled tasks and task-scoped rules: DESIGN.md §10 behaviour 14's "approve +
//! remember task" and behaviour 15 (the scheduler), on a manual clock.

use super::support::*;
use crate::support::PATIENCE;
use airlock_testkit::TestServer;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const TASK_SCENARIOS: &str = r##"
[[scenario]]
marker = "#bob-and-carol"
[[scenario.turn]]
events = [
  { type = "tool_use", name = "email.send", arguments = { to = "bob@example.com", subject = "s", body = "b" } },
  { type = "tool_use", name = "email.send", arguments = { to = "carol@example.com", subject = "s", body = "b" } },
]
[[scenario.turn]]
events = [{ type = "text", text = "Mailed." }]

[[scenario]]
marker = "#clock"
[[scenario.turn]]
events = [{ type = "tool_use", name = "clock.now", arguments = {} }]
[[scenario.turn]]
events = [{ type = "text", text = "Ticked." }]
"##;

async fn task_agent(server: &TestServer, name: &str, mode: Option<&str>) -> Agent {
    let file = server.data_dir().join(format!("{name}.toml"));
    std::fs::write(&file, TASK_SCENARIOS).unwrap();
    agent_with_llm(
        server,
        name,
        json!({"base_url": format!("scripted:{}", file.display()), "model": "script"}),
        mode,
    )
    .await
}

async fn create_task(server: &TestServer, agent: &Agent, instructions: &str, cron: &str) -> Value {
    server
        .client
        .post(
            "/v1/tasks",
            &server.owner_token,
            &json!({"title": instructions, "instructions": instructions, "agent": agent.id, "cron": cron}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap()
}

async fn task(server: &TestServer, id: &str) -> Value {
    server
        .client
        .get(&format!("/v1/tasks/{id}"), &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap()
}

/// Waits (bounded) until the task's last run is not `previous`; returns it.
async fn until_new_run(server: &TestServer, id: &str, previous: Option<&str>) -> String {
    let start = Instant::now();
    loop {
        let task = task(server, id).await;
        if let Some(run) = task["last_run_id"].as_str() {
            if Some(run) != previous {
                return run.to_owned();
            }
        }
        assert!(start.elapsed() < PATIENCE, "no new run of {id}: {task}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Permissions at creation become task rules (only valid write/external grants; the rest
/// reported with the reason); "approve + remember task" mints one rule; the next run of
/// the task allows exactly that target.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b14_remember_task_mints_one_rule_and_the_next_run_allows_exactly_that_target() {
    let server = runtime_server().await;
    task_agent(&server, "nightly", None).await;
    let created = server
        .client
        .post(
            "/v1/tasks",
            &server.owner_token,
            &json!({"title": "mail", "instructions": "#bob-and-carol", "agent": "nightly", "cron": "0 3 * * *",
                    "timezone": "Europe/Paris",
                    "permissions": [
                        {"tool": "shell.exec", "target": "ls", "access": "exec"},
                        {"tool": "email.send", "target": "", "access": "external"},
                        {"tool": "email.send", "target": "dan@example.com", "access": "write"},
                    ]}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    assert!(created["rules"].as_array().unwrap().is_empty(), "{created}");
    let dropped = created["dropped"].as_array().unwrap();
    assert_eq!(dropped.len(), 3, "{created}");
    for entry in dropped {
        assert!(!entry["reason"].as_str().unwrap().is_empty());
    }
    let id = created["task"]["id"].as_str().unwrap().to_owned();

    let first = server
        .client
        .post_empty(&format!("/v1/tasks/{id}/run"), &server.owner_token)
        .await
        .unwrap()
        .expect_status(202)
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let events = journal_until(&server, &first, "run_suspended").await;
    let approvals = approvals_required(&events);
    assert_eq!(approvals.len(), 2);
    let (bob, carol) = {
        let first = approval(&server, &approvals[0]).await;
        if first["standing_target"] == "bob@example.com" {
            (approvals[0].clone(), approvals[1].clone())
        } else {
            (approvals[1].clone(), approvals[0].clone())
        }
    };
    let digest = approval(&server, &bob).await["binding_digest"].clone();
    server
        .client
        .post(
            &format!("/v1/approvals/{bob}/decision"),
            &server.owner_token,
            &json!({"decision": "approve", "binding_digest": digest, "remember": {"scope": "task"}}),
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(decide(&server, &carol, "approve", "once").await, 200);
    until_state(&server, &first, "completed").await;
    let rules = server
        .client
        .get("/v1/rules", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let rules = rules["items"].as_array().unwrap();
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert_eq!(rules[0]["scope"], "task");
    assert_eq!(rules[0]["scope_id"], id.as_str());
    assert_eq!(rules[0]["target"], "bob@example.com");

    // The rebuilt run: Bob passes on the task's rule, Carol is asked again.
    let second = server
        .client
        .post_empty(&format!("/v1/tasks/{id}/run"), &server.owner_token)
        .await
        .unwrap()
        .expect_status(202)
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let events = journal_until(&server, &second, "run_suspended").await;
    let asked = approvals_required(&events);
    assert_eq!(asked.len(), 1);
    assert_eq!(
        approval(&server, &asked[0]).await["standing_target"],
        "carol@example.com"
    );
    let finished = events
        .iter()
        .find(|e| e["kind"] == "tool_finished")
        .unwrap();
    assert_eq!(finished["data"]["standing_rule"], rules[0]["id"]);
    // A replay of the policy in force changes nothing: Bob's call of the second run
    // replays under the task's rule as it was then (the call's record names its task).
    let replayed = server
        .client
        .put_text(
            "/v1/policy?dry_run=true",
            &server.owner_token,
            RUNTIME_POLICY,
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(replayed["changed"], 0, "{replayed}");
    assert!(
        replayed["before"]["allow"].as_u64().unwrap() >= 1,
        "{replayed}"
    );
    // Another run of the same task can't start while this one waits.
    let busy = server
        .client
        .post_empty(&format!("/v1/tasks/{id}/run"), &server.owner_token)
        .await
        .unwrap();
    assert_eq!(busy.status, 409);

    // Revoking the task revokes its rules.
    server
        .client
        .patch(
            &format!("/v1/tasks/{id}"),
            &server.owner_token,
            &json!({"revoke": true}),
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let rules = server
        .client
        .get("/v1/rules", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert!(rules["items"][0]["revoked_at"].is_string(), "{rules}");
}

/// Behaviour 15: a task parked on an approval does not stall other tasks; a tick while its
/// run is parked never dispatches it again; ticks missed while down run once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b15_the_scheduler_guards_overlap_and_never_stalls() {
    let server = runtime_server().await;
    let agent = task_agent(&server, "worker", None).await;
    let parked = create_task(&server, &agent, "#bob-and-carol", "*/5 * * * *").await;
    let clock = create_task(&server, &agent, "#clock", "*/5 * * * *").await;
    let parked_id = parked["task"]["id"].as_str().unwrap().to_owned();
    let clock_id = clock["task"]["id"].as_str().unwrap().to_owned();

    // The first tick: both tasks are due.
    server.advance(Duration::from_secs(5 * 60)).unwrap();
    let parked_run = until_new_run(&server, &parked_id, None).await;
    let clock_run = until_new_run(&server, &clock_id, None).await;
    until_state(&server, &parked_run, "awaiting_approval").await;
    until_state(&server, &clock_run, "completed").await;

    // Ticks while the first is parked: the other task keeps running, the parked one
    // is never dispatched again; several missed ticks dispatch once, not once each.
    server.advance(Duration::from_secs(30 * 60)).unwrap();
    let clock_second = until_new_run(&server, &clock_id, Some(&clock_run)).await;
    until_state(&server, &clock_second, "completed").await;
    let parked_now = task(&server, &parked_id).await;
    assert_eq!(parked_now["active_run_id"], parked_run.as_str());
    assert_eq!(parked_now["last_run_id"], parked_run.as_str());
    // Only one run came of the six missed ticks: the dispatch that started it moved the
    // task's next run past the (stopped) clock in the same transaction, so no later tick
    // finds the task due until the clock moves. A next run still in the past would mean
    // one run per missed tick.
    let clock_now = task(&server, &clock_id).await;
    assert_eq!(
        clock_now["last_run_id"],
        clock_second.as_str(),
        "{clock_now}"
    );
    let next: jiff::Timestamp = clock_now["next_run_at"].as_str().unwrap().parse().unwrap();
    assert!(
        next > server.gate().now(),
        "the next run {next} is not after now {}: {clock_now}",
        server.gate().now()
    );

    // Once the parked run ends, the task runs again at its next tick.
    for approval_id in pending_approvals(&server).await {
        let id = approval_id["id"].as_str().unwrap();
        assert_eq!(decide(&server, id, "reject", "not now").await, 200);
    }
    until_state(&server, &parked_run, "completed").await;
    assert!(task(&server, &parked_id).await["active_run_id"].is_null());
    server.advance(Duration::from_secs(5 * 60)).unwrap();
    let parked_second = until_new_run(&server, &parked_id, Some(&parked_run)).await;
    assert_ne!(parked_second, parked_run);
}

/// In `unattended` mode a task's run denies what would be asked, and completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b15_unattended_task_runs_deny_instead_of_asking() {
    let server = runtime_server().await;
    let agent = task_agent(&server, "night", Some("unattended")).await;
    let created = create_task(&server, &agent, "#bob-and-carol", "0 3 * * *").await;
    let id = created["task"]["id"].as_str().unwrap();
    let run = server
        .client
        .post_empty(&format!("/v1/tasks/{id}/run"), &server.owner_token)
        .await
        .unwrap()
        .expect_status(202)
        .unwrap();
    let run_id = run["id"].as_str().unwrap();
    until_state(&server, run_id, "completed").await;
    assert!(pending_approvals(&server).await.is_empty());
    let journal = whole_journal(&server, run_id).await;
    let denied = journal
        .iter()
        .filter(|e| e["kind"] == "tool_finished" && e["data"]["status"] == "denied")
        .count();
    assert_eq!(denied, 2);
}

/// Bad tasks are refused with the reason and nothing is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_with_bad_schedules_are_refused() {
    let server = runtime_server().await;
    let agent = task_agent(&server, "worker", None).await;
    for (cron, timezone, expected) in [
        ("* * *", "UTC", "five fields"),
        ("61 * * * *", "UTC", "minute"),
        ("0 3 * * *", "Mars/Olympus", "time zone"),
    ] {
        let reply = server
            .client
            .post(
                "/v1/tasks",
                &server.owner_token,
                &json!({"title": "t", "instructions": "i", "agent": agent.id, "cron": cron, "timezone": timezone}),
            )
            .await
            .unwrap();
        assert_eq!(reply.status, 422, "{cron}");
        assert!(reply.text.contains(expected), "{}", reply.text);
    }
    let tasks = server
        .client
        .get("/v1/tasks", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert!(tasks["items"].as_array().unwrap().is_empty());
}

/// The same permission twice is one rule: one stored row, one `rule.created`, and no
/// audit record citing a rule that was never stored (issue 18, defect 2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_listed_twice_is_one_rule() {
    let server = runtime_server().await;
    task_agent(&server, "twice", None).await;
    let permission =
        json!({"tool": "email.send", "target": "dan@example.com", "access": "external"});
    let created = server
        .client
        .post(
            "/v1/tasks",
            &server.owner_token,
            &json!({"title": "mail", "instructions": "#email", "agent": "twice",
                    "cron": "0 3 * * *", "permissions": [permission, permission]}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    let rules = created["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 1, "{created}");
    assert!(
        created["dropped"].as_array().unwrap().is_empty(),
        "{created}"
    );
    let stored = server
        .client
        .get("/v1/rules", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let stored_ids: Vec<&str> = stored["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| rule["id"].as_str().unwrap())
        .collect();
    assert_eq!(stored_ids, vec![rules[0]["id"].as_str().unwrap()]);
    let audit = crate::support::audit_records(&server).await;
    let cited: Vec<&str> = audit
        .iter()
        .filter(|record| record["kind"] == "rule.created")
        .map(|record| record["subject"].as_str().unwrap())
        .collect();
    assert_eq!(cited, stored_ids, "every rule.created cites a stored rule");
}
