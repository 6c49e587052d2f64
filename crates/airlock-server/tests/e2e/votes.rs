//! The two-person rule (DESIGN.md §11.6): `approvals = N` distinct people, `approvers`
//! naming who may decide, votes kept and audited, one rejection rejects, and the person
//! whose own session asked never counts. The races: one person's concurrent votes count
//! once, N people's concurrent approvals make exactly one transition and one grant, and a
//! rejection racing the last approval gives exactly one outcome. Runs on SQLite, and on
//! PostgreSQL with `AIRLOCK_TEST_BACKEND=postgres`.

use crate::support::{audit_records, page_as, POLICY};
use airlock_protocol::Role;
use airlock_testkit::{Reply, TestServer};
use serde_json::{json, Value};

/// [`POLICY`] plus: payments need two people, vault openings three, deploys an admin or
/// bob.
fn policy() -> String {
    POLICY.to_owned()
        + r#"
[[rules]]
name = "payments-need-two"
tool = "payment.send"
decision = "ask"
approvals = 2

[[rules]]
name = "vault-needs-three"
tool = "vault.open"
decision = "ask"
approvals = 3

[[rules]]
name = "deploys-by-admins-or-bob"
tool = "deploy.run"
decision = "ask"
approvers = ["admin", "user:bob"]
"#
}

/// A server under [`policy`], an agent, and approvers ada, bob, carl, dora and eve.
struct World {
    server: TestServer,
    agent: String,
    agent_id: String,
    people: Vec<(String, String)>,
}

impl World {
    async fn start() -> World {
        let server = TestServer::start().await.unwrap();
        server.put_policy(&policy()).await.unwrap();
        let (agent_id, agent) = server.create_agent("scout").await.unwrap();
        let mut people = Vec::new();
        for name in ["ada", "bob", "carl", "dora", "eve"] {
            let (_, token) = server.create_user(name, Role::Approver).await.unwrap();
            people.push((name.to_owned(), token));
        }
        World {
            server,
            agent,
            agent_id,
            people,
        }
    }

    fn token(&self, name: &str) -> &str {
        &self.people.iter().find(|(n, _)| n == name).unwrap().1
    }

    /// Submits `tool` (asked) in `session`; returns the approval.
    async fn ask(&self, tool: &str, session: Option<&str>) -> Value {
        let mut body = json!({"tool": tool, "arguments": {"amount": 100}});
        if let Some(session) = session {
            body["session_id"] = session.into();
        }
        let call = self
            .server
            .client
            .post("/v1/calls", &self.agent, &body)
            .await
            .unwrap()
            .expect_status(201)
            .unwrap();
        assert_eq!(call["status"], "pending", "{call}");
        self.get(&format!(
            "/v1/approvals/{}",
            call["approval_id"].as_str().unwrap()
        ))
        .await
    }

    async fn get(&self, path: &str) -> Value {
        self.server
            .client
            .get(path, &self.server.owner_token)
            .await
            .unwrap()
            .expect_status(200)
            .unwrap()
    }

    async fn vote(&self, who: &str, approval: &Value, decision: &str) -> Reply {
        vote(&self.server.client, self.token(who), approval, decision).await
    }

    /// A vote that must be taken: the approval as it is after it.
    async fn voted(&self, who: &str, approval: &Value, decision: &str) -> Value {
        self.vote(who, approval, decision)
            .await
            .expect_status(200)
            .unwrap()
    }
}

async fn vote(
    client: &airlock_testkit::Client,
    token: &str,
    approval: &Value,
    decision: &str,
) -> Reply {
    let id = approval["id"].as_str().unwrap();
    client
        .post(
            &format!("/v1/approvals/{id}/decision"),
            token,
            &json!({"decision": decision, "binding_digest": approval["binding_digest"]}),
        )
        .await
        .unwrap()
}

fn count(records: &[Value], approval: &Value, kind: &str) -> usize {
    records
        .iter()
        .filter(|r| r["subject"] == approval["id"] && r["kind"] == kind)
        .count()
}

#[tokio::test]
async fn the_approval_waits_for_two_people_and_each_vote_is_audited() {
    let world = World::start().await;
    let approval = world.ask("payment.send", None).await;
    assert_eq!(approval["approvals_required"], 2, "{approval}");
    assert!(approval.get("votes").is_none(), "{approval}");

    let first = world.voted("ada", &approval, "approve").await;
    assert_eq!(first["status"], "pending", "{first}");
    assert_eq!(first["votes"].as_array().unwrap().len(), 1);
    assert_eq!(first["votes"][0]["decision"], "approve");
    assert!(first["votes"][0]["user"]
        .as_str()
        .unwrap()
        .starts_with("user:"));
    assert!(first["votes"][0]["at"].is_string());
    let call_id = approval["call_id"].as_str().unwrap();
    let call = world.get(&format!("/v1/calls/{call_id}")).await;
    assert_eq!(
        call["status"], "pending",
        "one vote decides nothing: {call}"
    );
    assert!(call.get("grant_id").is_none_or(Value::is_null), "{call}");

    // The same person again, either way: counted once, refused, nothing written.
    let before = audit_records(&world.server).await;
    for decision in ["approve", "reject"] {
        let again = world.vote("ada", &approval, decision).await;
        assert_eq!(again.status, 409, "{}", again.text);
        assert_eq!(again.problem_type(), "already_voted");
    }
    assert_eq!(audit_records(&world.server).await, before);

    let second = world.voted("bob", &approval, "approve").await;
    assert_eq!(second["status"], "approved", "{second}");
    assert_eq!(second["votes"].as_array().unwrap().len(), 2);
    let call = world.get(&format!("/v1/calls/{call_id}")).await;
    assert_eq!(call["status"], "approved");
    assert!(call["grant_id"].is_string(), "{call}");
    let redeemed = world
        .server
        .client
        .post_empty(&format!("/v1/calls/{call_id}/redeem"), &world.agent)
        .await
        .unwrap();
    assert_eq!(redeemed.status, 200, "{}", redeemed.text);

    let records = audit_records(&world.server).await;
    assert_eq!(count(&records, &approval, "approval.voted"), 2);
    assert_eq!(count(&records, &approval, "approval.approved"), 1);
    let voters: Vec<&Value> = records
        .iter()
        .filter(|r| r["subject"] == approval["id"] && r["kind"] == "approval.voted")
        .map(|r| &r["actor"])
        .collect();
    assert_ne!(voters[0], voters[1], "two distinct people");
    let verify = world.get("/v1/audit/verify").await;
    assert_eq!(verify["ok"], true, "{verify}");
    // A third person is too late.
    let late = world.vote("carl", &approval, "approve").await;
    assert_eq!(late.problem_type(), "already_decided", "{}", late.text);
}

#[tokio::test]
async fn one_rejection_rejects() {
    let world = World::start().await;
    let approval = world.ask("payment.send", None).await;
    world.voted("ada", &approval, "approve").await;
    let rejected = world.voted("bob", &approval, "reject").await;
    assert_eq!(rejected["status"], "rejected", "{rejected}");
    let call = world
        .get(&format!(
            "/v1/calls/{}",
            approval["call_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(call["status"], "rejected");
    // A rejection alone, as the first vote, rejects too.
    let approval = world.ask("payment.send", None).await;
    let rejected = world.voted("carl", &approval, "reject").await;
    assert_eq!(rejected["status"], "rejected", "{rejected}");
}

#[tokio::test]
async fn the_person_whose_own_session_asked_never_counts() {
    let world = World::start().await;
    let session = world
        .server
        .client
        .post(
            "/v1/sessions",
            world.token("ada"),
            &json!({"agent_id": world.agent_id}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    let approval = world
        .ask("payment.send", Some(session["id"].as_str().unwrap()))
        .await;
    let before = audit_records(&world.server).await;
    let own = world.vote("ada", &approval, "approve").await;
    assert_eq!(own.status, 403, "{}", own.text);
    assert_eq!(own.problem_type(), "forbidden");
    assert!(own.text.contains("session you opened"), "{}", own.text);
    assert_eq!(audit_records(&world.server).await, before);
    // Two other people decide it.
    world.voted("bob", &approval, "approve").await;
    let done = world.voted("carl", &approval, "approve").await;
    assert_eq!(done["status"], "approved");
}

#[tokio::test]
async fn approvers_name_who_may_decide() {
    let world = World::start().await;
    let approval = world.ask("deploy.run", None).await;
    assert_eq!(approval["approvers"], json!(["admin", "user:bob"]));
    assert!(approval.get("approvals_required").is_none(), "{approval}");
    let refused = world.vote("carl", &approval, "approve").await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert!(refused.text.contains("admin, user:bob"), "{}", refused.text);
    // In a batch, the refusal is that item's alone.
    let other = world.ask("deploy.run", None).await;
    let reply = world
        .server
        .client
        .post(
            "/v1/approvals/decisions",
            world.token("carl"),
            &json!({"items": [
                {"id": approval["id"], "binding_digest": approval["binding_digest"], "decision": "approve"},
                {"id": other["id"], "binding_digest": other["binding_digest"], "decision": "reject"},
            ]}),
        )
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(
        reply["results"][0]["problem"]["type"], "forbidden",
        "{reply}"
    );
    assert_eq!(
        reply["results"][1]["problem"]["type"], "forbidden",
        "{reply}"
    );
    // bob by name, and the owner (above admin), may.
    let approved = world.voted("bob", &approval, "approve").await;
    assert_eq!(approved["status"], "approved");
    let reply = vote(
        &world.server.client,
        &world.server.owner_token,
        &other,
        "reject",
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}

#[tokio::test]
async fn an_approval_that_needs_two_is_not_edited_nor_remembered() {
    let world = World::start().await;
    let approval = world.ask("payment.send", None).await;
    let id = approval["id"].as_str().unwrap();
    for extra in [
        json!({"arguments": {"amount": 1}}),
        json!({"remember": {"scope": "agent"}}),
    ] {
        let mut body = json!({"decision": "approve", "binding_digest": approval["binding_digest"]});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let reply = world
            .server
            .client
            .post(
                &format!("/v1/approvals/{id}/decision"),
                world.token("ada"),
                &body,
            )
            .await
            .unwrap();
        assert_eq!(reply.status, 422, "{}", reply.text);
        assert!(reply.text.contains("needs 2 people"), "{}", reply.text);
    }
    let now = world.get(&format!("/v1/approvals/{id}")).await;
    assert_eq!(now, approval);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_votes_by_one_person_count_once() {
    let world = World::start().await;
    let approval = world.ask("payment.send", None).await;
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let client = world.server.client.clone();
        let token = world.token("ada").to_owned();
        let approval = approval.clone();
        tasks.push(tokio::spawn(async move {
            vote(&client, &token, &approval, "approve").await
        }));
    }
    let mut counted = 0;
    for task in tasks {
        let reply = task.await.unwrap();
        match reply.status.as_u16() {
            200 => counted += 1,
            409 => assert_eq!(reply.problem_type(), "already_voted", "{}", reply.text),
            other => panic!("unexpected {other}: {}", reply.text),
        }
    }
    assert_eq!(counted, 1);
    let now = world
        .get(&format!(
            "/v1/approvals/{}",
            approval["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(now["status"], "pending");
    assert_eq!(now["votes"].as_array().unwrap().len(), 1, "{now}");
    let records = audit_records(&world.server).await;
    assert_eq!(count(&records, &approval, "approval.voted"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_approvals_by_more_people_than_needed_make_one_transition_and_one_grant() {
    let world = World::start().await;
    for round in 0..3 {
        let approval = world.ask("vault.open", None).await;
        assert_eq!(approval["approvals_required"], 3);
        let mut tasks = Vec::new();
        for (_, token) in world.people.clone() {
            let client = world.server.client.clone();
            let approval = approval.clone();
            tasks.push(tokio::spawn(async move {
                vote(&client, &token, &approval, "approve").await
            }));
        }
        let (mut approved, mut pending, mut late) = (0, 0, 0);
        for task in tasks {
            let reply = task.await.unwrap();
            match (reply.status.as_u16(), reply.text.as_str()) {
                (200, text) if text.contains("\"status\":\"approved\"") => approved += 1,
                (200, _) => pending += 1,
                (409, _) => {
                    assert_eq!(reply.problem_type(), "already_decided", "{}", reply.text);
                    late += 1;
                }
                (other, text) => panic!("unexpected {other}: {text}"),
            }
        }
        assert_eq!((approved, pending, late), (1, 2, 2), "round {round}");
        let records = audit_records(&world.server).await;
        assert_eq!(count(&records, &approval, "approval.approved"), 1);
        assert_eq!(count(&records, &approval, "approval.voted"), 3);
        let call_id = approval["call_id"].as_str().unwrap();
        let call = world.get(&format!("/v1/calls/{call_id}")).await;
        assert_eq!(call["status"], "approved");
        // One grant: it redeems once.
        let path = format!("/v1/calls/{call_id}/redeem");
        let first = world
            .server
            .client
            .post_empty(&path, &world.agent)
            .await
            .unwrap();
        assert_eq!(first.status, 200, "{}", first.text);
        let second = world
            .server
            .client
            .post_empty(&path, &world.agent)
            .await
            .unwrap();
        assert_eq!(second.problem_type(), "grant_spent", "{}", second.text);
    }
    let verify = world.get("/v1/audit/verify").await;
    assert_eq!(verify["ok"], true, "{verify}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejection_racing_the_last_approval_gives_exactly_one_outcome() {
    let world = World::start().await;
    for round in 0..5 {
        let approval = world.ask("payment.send", None).await;
        world.voted("ada", &approval, "approve").await;
        let client = world.server.client.clone();
        let (bob, carl) = (
            world.token("bob").to_owned(),
            world.token("carl").to_owned(),
        );
        let (a, b) = tokio::join!(
            vote(&client, &bob, &approval, "approve"),
            vote(&client, &carl, &approval, "reject"),
        );
        let outcomes: Vec<(u16, String)> = [a, b]
            .into_iter()
            .map(|reply| {
                let kind = if reply.status == 200 {
                    serde_json::from_str::<Value>(&reply.text).unwrap()["status"]
                        .as_str()
                        .unwrap()
                        .to_owned()
                } else {
                    reply.problem_type().to_owned()
                };
                (reply.status.as_u16(), kind)
            })
            .collect();
        let winners: Vec<&String> = outcomes
            .iter()
            .filter(|(status, _)| *status == 200)
            .map(|(_, kind)| kind)
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {outcomes:?}");
        assert!(
            outcomes
                .iter()
                .any(|(status, kind)| *status == 409 && kind == "already_decided"),
            "round {round}: {outcomes:?}"
        );
        let now = world
            .get(&format!(
                "/v1/approvals/{}",
                approval["id"].as_str().unwrap()
            ))
            .await;
        assert_eq!(&now["status"], winners[0].as_str(), "round {round}");
        let records = audit_records(&world.server).await;
        let settled = count(&records, &approval, "approval.approved")
            + count(&records, &approval, "approval.rejected");
        assert_eq!(settled, 1, "round {round}");
    }
}

#[tokio::test]
async fn bad_two_person_keys_do_not_load_and_say_where() {
    let world = World::start().await;
    let cases = [
        ("approvals = 0", "1 to 20 distinct people"),
        ("approvals = -2", "1 to 20 distinct people"),
        ("approvers = [\"boss\"]", "neither a role"),
        ("approvers = [\"viewer\"]", "viewers cannot decide"),
        ("approvers = [\"user:\"]", "names no user"),
        ("approvers = []", "nobody could decide"),
        (
            "approvals = 2\napprovers = [\"user:bob\"]",
            "names only 1 user",
        ),
    ];
    for (keys, message) in cases {
        let text = format!(
            "version = 1\n\n[[rules]]\nname = \"r\"\ntool = \"x.y\"\ndecision = \"ask\"\n{keys}\n"
        );
        let reply = world
            .server
            .client
            .put_text("/v1/policy", &world.server.owner_token, &text)
            .await
            .unwrap();
        assert_eq!(reply.status, 422, "{keys}: {}", reply.text);
        assert!(reply.text.contains(message), "{keys}: {}", reply.text);
        let body: Value = serde_json::from_str(&reply.text).unwrap();
        assert_eq!(body["errors"][0]["line"], 7, "{keys}: {body}");
    }
    let text = "version = 1\n\n[[rules]]\ntool = \"x.y\"\ndecision = \"deny\"\napprovals = 2\n";
    let reply = world
        .server
        .client
        .put_text("/v1/policy", &world.server.owner_token, text)
        .await
        .unwrap();
    assert_eq!(reply.status, 422, "{}", reply.text);
    assert!(reply
        .text
        .contains("only applies to rules whose decision is ask"));
    // The policy in force is unchanged: payments still need two.
    let approval = world.ask("payment.send", None).await;
    assert_eq!(approval["approvals_required"], 2);
}

#[tokio::test]
async fn the_inbox_shows_how_many_approved_and_who() {
    let world = World::start().await;
    let approval = world.ask("payment.send", None).await;
    world.voted("ada", &approval, "approve").await;
    let approval_page = format!("/approvals/{}", approval["id"].as_str().unwrap());
    for path in ["/", approval_page.as_str()] {
        let html = page_as(&world.server, world.token("bob"), path).await;
        assert!(html.contains("1 of 2 approvals"), "{path}: {html}");
        assert!(html.contains("ada approved"), "{path}: {html}");
    }
}
