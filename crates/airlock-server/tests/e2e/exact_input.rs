//! Input the server used to take and silently change, or take and ignore (audit C): each
//! is now refused with 422 `invalid` (409 for a taken user name), saying what was wrong,
//! and nothing is written.
//! - durations past 100 years (`expires_in` of a rule or of "approve + remember", a
//!   policy's `deadline`), which made every later read of the row fail (H1, H2);
//! - duplicate keys at any depth, of which serde kept the last (M1);
//! - numbers a double does not keep exactly, which were rounded (M2, M3);
//! - a top level that is not an object, read as a struct's fields in order (M8);
//! - a body sent to an endpoint that takes none, which was ignored (M7);
//! - a second user of one name, which `approvers = ["user:NAME"]` admitted too (M10).

use crate::support::{ask, audit_records, server, POLICY};
use airlock_testkit::{Reply, TestServer};
use reqwest::Method;
use serde_json::{json, Value};

/// A raw JSON body, exactly as written (serde_json would fold its duplicate keys).
async fn post_raw(server: &TestServer, path: &str, token: &str, body: &str) -> Reply {
    server
        .client
        .raw(
            Method::POST,
            path,
            Some(token),
            Some("application/json"),
            body.as_bytes().to_vec(),
        )
        .await
        .unwrap()
}

fn assert_invalid(reply: &Reply, needle: &str) {
    assert_eq!(reply.status, 422, "{}", reply.text);
    assert_eq!(reply.problem_type(), "invalid", "{}", reply.text);
    let detail = reply.body["detail"].as_str().unwrap();
    assert!(detail.contains(needle), "{needle:?} not in {detail:?}");
}

async fn agent_id(server: &TestServer, agent: &str) -> String {
    server
        .client
        .get("/v1/agents/me", agent)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// H1: a rule that would end past year 9999 was stored as a time the store could not read
/// back, and then every call, every rule listing and every revoke answered 503.
#[tokio::test]
async fn rule_durations_past_a_hundred_years_are_422_and_the_gate_keeps_serving() {
    let (server, agent) = server().await;
    let owner = &server.owner_token;
    let scope_id = agent_id(&server, &agent).await;
    let audit_before = audit_records(&server).await.len();
    for expires_in in [json!("2932000d"), json!("36526d"), json!(3_155_760_001_u64)] {
        let reply = server
            .client
            .post(
                "/v1/rules",
                owner,
                &json!({"tool": "email.send", "target": "d@x.test", "scope": "agent",
                        "scope_id": scope_id, "expires_in": expires_in}),
            )
            .await
            .unwrap();
        assert_invalid(&reply, "expires_in must be at most 36525d (100 years");
    }
    assert_eq!(audit_records(&server).await.len(), audit_before);
    let rules = server
        .client
        .get("/v1/rules", owner)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(rules["items"], json!([]), "{rules}");
    // The longest accepted one is stored and read back, and calls are still decided.
    let longest = server
        .client
        .post(
            "/v1/rules",
            owner,
            &json!({"tool": "email.send", "target": "d@x.test", "scope": "agent",
                    "scope_id": scope_id, "expires_in": "36525d"}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    let call = server
        .submit(
            &agent,
            "email.send",
            json!({"to": "d@x.test", "body": "hi"}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    assert_eq!(call["status"], "allowed", "{call}");
    assert_eq!(call["decided_by"], "standing_rule", "{call}");
    let id = longest["id"].as_str().unwrap();
    server
        .client
        .delete(&format!("/v1/rules/{id}"), owner)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
}

/// H1's second way in: "approve + remember" with a huge `expires_in` is refused whole:
/// the approval stays pending, no rule, no audit record.
#[tokio::test]
async fn approve_and_remember_past_a_hundred_years_is_422_and_decides_nothing() {
    let (server, agent) = server().await;
    let (call, approval) = ask(&server, &agent, "far@elsewhere.test").await;
    let audit_before = audit_records(&server).await.len();
    let id = approval["id"].as_str().unwrap();
    let reply = server
        .client
        .post(
            &format!("/v1/approvals/{id}/decision"),
            &server.owner_token,
            &json!({"decision": "approve", "binding_digest": approval["binding_digest"],
                    "remember": {"scope": "agent", "expires_in": "2932000d"}}),
        )
        .await
        .unwrap();
    assert_invalid(&reply, "expires_in must be at most 36525d");
    assert_eq!(audit_records(&server).await.len(), audit_before);
    let still = server
        .client
        .get(&format!("/v1/approvals/{id}"), &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(still["status"], "pending", "{still}");
    // The same approval with a sane duration goes through, and the gate reads it all back.
    let reply = server
        .client
        .post(
            &format!("/v1/approvals/{id}/decision"),
            &server.owner_token,
            &json!({"decision": "approve", "binding_digest": approval["binding_digest"],
                    "remember": {"scope": "agent", "expires_in": "30d"}}),
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text);
    let call_id = call["id"].as_str().unwrap();
    server
        .client
        .get(&format!("/v1/calls/{call_id}"), &agent)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
}

/// H2: a policy `deadline` past 100 years is a load error with its position, and the
/// policy in force stays (as for `0s`).
#[tokio::test]
async fn a_policy_deadline_past_a_hundred_years_does_not_load() {
    let (server, agent) = server().await;
    let huge = POLICY.replace("deadline = \"1h\"", "deadline = \"100000000000d\"");
    assert_ne!(huge, POLICY);
    let reply = server
        .client
        .put_text("/v1/policy", &server.owner_token, &huge)
        .await
        .unwrap();
    assert_eq!(reply.status, 422, "{}", reply.text);
    let errors = reply.body["errors"].as_array().unwrap();
    assert_eq!(errors[0]["line"], 4, "{}", reply.text);
    assert_eq!(errors[0]["column"], 12, "{}", reply.text);
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("at most 36525d (100 years)"),
        "{}",
        reply.text
    );
    let policy = server
        .client
        .get("/v1/policy", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(policy["source"], POLICY);
    // Asked calls are still parked and listed.
    ask(&server, &agent, "far@elsewhere.test").await;
    server
        .client
        .get("/v1/approvals?status=pending", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
}

/// M1: `{"to":"evil","to":"ana"}` was judged (and shown) as its last value while a tool
/// that keeps the first would mail `evil`. Refused at any depth, in every JSON body.
#[tokio::test]
async fn duplicate_keys_anywhere_in_a_body_are_422_naming_the_key() {
    let (server, agent) = server().await;
    let audit_before = audit_records(&server).await.len();
    let cases = [
        (
            "/v1/calls",
            r#"{"tool":"email.send","arguments":{"to":"evil@evil.test","to":"ana@example.com","body":"x"}}"#,
            "arguments: duplicate key `to`",
        ),
        (
            "/v1/calls",
            r#"{"tool":"email.send","arguments":{"to":"a@b.test","opts":[{"cc":"x","c\u0063":"y"}]}}"#,
            "arguments.opts[0]: duplicate key `cc`",
        ),
        (
            "/v1/policy/evaluate",
            r#"{"tool":"email.send","arguments":{"to":"x","to":"y"}}"#,
            "arguments: duplicate key `to`",
        ),
    ];
    for (path, body, needle) in cases {
        let token = if path == "/v1/calls" {
            &agent
        } else {
            &server.owner_token
        };
        assert_invalid(&post_raw(&server, path, token, body).await, needle);
    }
    assert_eq!(audit_records(&server).await.len(), audit_before);

    // An edit with a duplicate key decides nothing either.
    let (_, approval) = ask(&server, &agent, "bob@elsewhere.test").await;
    let id = approval["id"].as_str().unwrap();
    let digest = approval["binding_digest"].as_str().unwrap();
    let body = format!(
        r#"{{"decision":"approve","binding_digest":"{digest}","arguments":{{"to":"bob@elsewhere.test","to":"eve@elsewhere.test","body":"hello"}}}}"#
    );
    let reply = post_raw(
        &server,
        &format!("/v1/approvals/{id}/decision"),
        &server.owner_token,
        &body,
    )
    .await;
    assert_invalid(&reply, "arguments: duplicate key `to`");
    let still = server
        .client
        .get(&format!("/v1/approvals/{id}"), &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(still["status"], "pending", "{still}");
}

/// M2, M3: numbers were rounded to doubles (`12345678901234567890123` became
/// `1.2345678901234568e+22`), so the person approved, and the digest bound, another value.
/// Numbers a double keeps are taken and stored as sent.
#[tokio::test]
async fn numbers_a_double_cannot_keep_are_422_and_the_others_are_kept() {
    let (server, agent) = server().await;
    let audit_before = audit_records(&server).await.len();
    for (literal, needle) in [
        (
            "12345678901234567890123",
            "arguments.n: the integer 12345678901234567890123 cannot be kept exactly",
        ),
        ("18446744073709551616", "within ±9007199254740991"),
        ("-9223372036854775809", "cannot be kept exactly"),
        ("9007199254740993", "cannot be kept exactly"),
        ("100000000000000000000000000000.5", "would become 1e+29"),
        ("-0", "negative zero"),
    ] {
        let body = format!(
            r#"{{"tool":"email.send","arguments":{{"to":"n@elsewhere.test","n":{literal}}}}}"#
        );
        assert_invalid(&post_raw(&server, "/v1/calls", &agent, &body).await, needle);
    }
    assert_eq!(audit_records(&server).await.len(), audit_before);

    let body = r#"{"tool":"email.send","arguments":{"to":"n@elsewhere.test","big":9007199254740991,"small":-42,"price":2.5,"tenth":0.1}}"#;
    let reply = post_raw(&server, "/v1/calls", &agent, body).await;
    assert_eq!(reply.status, 201, "{}", reply.text);
    assert_eq!(
        reply.body["arguments"],
        json!({"to": "n@elsewhere.test", "big": 9_007_199_254_740_991_u64, "small": -42,
               "price": 2.5, "tenth": 0.1})
    );
}

/// M8: `["approve", "<digest>"]` decided an approval and `["arrayuser","admin"]` made an
/// admin; serde's sequence form of structs is no way to talk to the API.
#[tokio::test]
async fn a_body_that_is_not_an_object_is_422_on_every_json_endpoint() {
    let (server, agent) = server().await;
    let owner = &server.owner_token;
    let (_, approval) = ask(&server, &agent, "arr@elsewhere.test").await;
    let id = approval["id"].as_str().unwrap();
    let digest = approval["binding_digest"].as_str().unwrap();
    let audit_before = audit_records(&server).await.len();
    let cases = [
        (
            format!("/v1/approvals/{id}/decision"),
            owner.as_str(),
            format!(r#"["approve","{digest}"]"#),
        ),
        (
            "/v1/users".to_owned(),
            owner.as_str(),
            r#"["arrayuser","admin"]"#.to_owned(),
        ),
        (
            "/v1/calls".to_owned(),
            agent.as_str(),
            r#"["email.send",{"to":"a@b.test"}]"#.to_owned(),
        ),
        ("/v1/calls".to_owned(), agent.as_str(), "[]".to_owned()),
        (
            "/v1/sessions".to_owned(),
            owner.as_str(),
            "\"text\"".to_owned(),
        ),
        ("/v1/rules".to_owned(), owner.as_str(), "42".to_owned()),
        (
            "/v1/approvals/decisions".to_owned(),
            owner.as_str(),
            "null".to_owned(),
        ),
    ];
    for (path, token, body) in cases {
        let reply = post_raw(&server, &path, token, &body).await;
        assert_invalid(&reply, "the body must be a JSON object");
        assert!(!reply.text.contains("struct"), "{}", reply.text);
    }
    assert_eq!(audit_records(&server).await.len(), audit_before);
    let still = server
        .client
        .get(&format!("/v1/approvals/{id}"), owner)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(still["status"], "pending", "{still}");
    // Malformed JSON is still 400, whatever it starts with.
    let reply = post_raw(&server, "/v1/calls", &agent, "[1,").await;
    assert_eq!(reply.status, 400, "{}", reply.text);
}

/// M7: a redeem "with other arguments" answered 200 and consumed the grant: the agent never
/// learnt that its body was ignored. Endpoints that take no body refuse one, and do nothing.
#[tokio::test]
async fn a_body_sent_to_an_endpoint_that_takes_none_is_422_and_nothing_happens() {
    let (server, agent) = server().await;
    let owner = &server.owner_token;
    let call = server
        .submit(&agent, "fs.read", json!({"path": "/etc/motd"}))
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    assert_eq!(call["status"], "allowed", "{call}");
    let redeem = format!("/v1/calls/{}/redeem", call["id"].as_str().unwrap());
    for (content_type, body, needle) in [
        (
            "application/json",
            r#"{"arguments":{"command":"rm -rf /"}}"#,
            "`arguments`",
        ),
        ("text/plain", "garbage", "not even JSON"),
        ("application/json", "[]", "JSON other than `{}`"),
    ] {
        let reply = server
            .client
            .raw(
                Method::POST,
                &redeem,
                Some(&agent),
                Some(content_type),
                body.as_bytes().to_vec(),
            )
            .await
            .unwrap();
        assert_invalid(&reply, "takes no body");
        assert_invalid(&reply, needle);
    }
    // The grant was not consumed: the first real redeem (with `{}`, as clients send) wins.
    let reply = server
        .client
        .post(&redeem, &agent, &json!({}))
        .await
        .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.body["replayed"], false, "{}", reply.text);

    // Cancel with a reason: refused, the approval stays pending.
    let (asked, approval) = ask(&server, &agent, "c@elsewhere.test").await;
    let cancel = format!("/v1/calls/{}/cancel", asked["id"].as_str().unwrap());
    let reply = post_raw(&server, &cancel, &agent, r#"{"reason":"x"}"#).await;
    assert_invalid(&reply, "`reason`");
    let approval_path = format!("/v1/approvals/{}", approval["id"].as_str().unwrap());
    let still = server
        .client
        .get(&approval_path, owner)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(still["status"], "pending", "{still}");
    server
        .client
        .post_empty(&cancel, &agent)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();

    // Revoking a rule with a body: refused, the rule stays live.
    let scope_id = agent_id(&server, &agent).await;
    let rule = server
        .client
        .post(
            "/v1/rules",
            owner,
            &json!({"tool": "email.send", "target": "r@x.test", "scope": "agent", "scope_id": scope_id}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    let rule_path = format!("/v1/rules/{}", rule["id"].as_str().unwrap());
    let reply = server
        .client
        .send(
            server
                .client
                .request(Method::DELETE, &rule_path, Some(owner))
                .json(&json!({"anything": [1]})),
        )
        .await
        .unwrap();
    assert_invalid(&reply, "DELETE");
    assert_invalid(&reply, "`anything`");
    let rules = server
        .client
        .get("/v1/rules", owner)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(rules["items"][0]["revoked_at"], Value::Null, "{rules}");
    server
        .client
        .delete(&rule_path, owner)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
}

/// M10: a second user named like an approver met `approvers = ["user:NAME"]` too. User
/// names are unique per workspace, as agent names are.
#[tokio::test]
async fn a_second_user_of_one_name_is_409_conflict() {
    let (server, _) = server().await;
    let owner = &server.owner_token;
    let body = json!({"name": "u_approver", "role": "approver"});
    server
        .client
        .post("/v1/users", owner, &body)
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    let audit_before = audit_records(&server).await.len();
    let reply = server
        .client
        .post(
            "/v1/users",
            owner,
            &json!({"name": "u_approver", "role": "admin"}),
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 409, "{}", reply.text);
    assert_eq!(reply.problem_type(), "conflict", "{}", reply.text);
    assert!(
        reply.text.contains("a user with this name"),
        "{}",
        reply.text
    );
    assert_eq!(audit_records(&server).await.len(), audit_before);
    let users = server
        .client
        .get("/v1/users", owner)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    let named = users["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|user| user["name"] == "u_approver")
        .count();
    assert_eq!(named, 1, "{users}");
}

/// M5: a right-to-left override showed `bob@evil\u{202e}tset.elpmaxe` as
/// `bob@evilexample.test` in the arguments, the edit box and the standing-rule target; a
/// zero-width space hid in the body. The page writes them out and holds none raw.
#[tokio::test]
async fn the_approval_page_writes_out_hidden_characters() {
    let (server, agent) = server().await;
    let call = server
        .submit(
            &agent,
            "email.send",
            json!({"to": "bob@evil\u{202e}tset.elpmaxe", "body": "x\u{200b}"}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    let id = call["approval_id"].as_str().unwrap();
    let page =
        crate::support::page_as(&server, &server.owner_token, &format!("/approvals/{id}")).await;
    for hidden in ['\u{202e}', '\u{200b}'] {
        assert!(!page.contains(hidden), "{hidden:?} raw in the page");
    }
    // The arguments block and the edit box: JSON escapes, the same value.
    assert!(
        page.matches(r"bob@evil\u202etset.elpmaxe").count() >= 2,
        "{page}"
    );
    assert!(page.contains(r"x\u200b"), "{page}");
    // The standing-rule target and "approve and remember … on": written out.
    assert!(
        page.matches("bob@evil&lt;U+202E&gt;tset.elpmaxe").count() >= 2,
        "{page}"
    );
}

/// L3: a tool name holding a line break split rows of `airlock approvals list`.
#[tokio::test]
async fn a_tool_name_with_a_control_or_invisible_character_is_422() {
    let (server, agent) = server().await;
    let audit_before = audit_records(&server).await.len();
    for tool in ["a\nb", "email.send\u{202e}", "fs.read\u{200b}", "\u{7}"] {
        let reply = server.submit(&agent, tool, json!({})).await.unwrap();
        assert_invalid(&reply, "control or invisible");
    }
    assert_eq!(audit_records(&server).await.len(), audit_before);
}

/// M9: the dry run took an agent id for an unknown name (so a read-only agent's call read
/// `ask`, where the gate denies it by mode), took unknown agents, and skipped the checks a
/// real call gets.
#[tokio::test]
async fn the_dry_run_knows_agents_by_name_or_id_and_checks_what_the_gate_checks() {
    let (server, _) = server().await;
    let owner = &server.owner_token;
    let created = server
        .client
        .post(
            "/v1/agents",
            owner,
            &json!({"name": "reader", "mode": "read_only"}),
        )
        .await
        .unwrap()
        .expect_status(201)
        .unwrap();
    let id = created["agent"]["id"].as_str().unwrap().to_owned();
    for agent in ["reader", id.as_str()] {
        let verdict = server
            .client
            .post(
                "/v1/policy/evaluate",
                owner,
                &json!({"tool": "email.send", "arguments": {"to": "a@b.test"}, "agent": agent}),
            )
            .await
            .unwrap()
            .expect_status(200)
            .unwrap();
        assert_eq!(verdict["decision"], "deny", "{agent}: {verdict}");
        assert_eq!(verdict["decided_by"], "mode", "{agent}: {verdict}");
    }
    let reply = server
        .client
        .post(
            "/v1/policy/evaluate",
            owner,
            &json!({"tool": "email.send", "arguments": {}, "agent": "nobody"}),
        )
        .await
        .unwrap();
    assert_eq!(reply.status, 404, "{}", reply.text);
    for (body, needle) in [
        (
            json!({"tool": "email.send", "arguments": []}),
            "arguments must be a JSON object",
        ),
        (
            json!({"tool": "", "arguments": {}}),
            "tool must be 1 to 200 characters",
        ),
    ] {
        let reply = server
            .client
            .post("/v1/policy/evaluate", owner, &body)
            .await
            .unwrap();
        assert_invalid(&reply, needle);
    }
}

/// M6: on PostgreSQL a U+0000 answered `503 unavailable, retry later` (its text cannot
/// hold one), so a client retried for ever; SQLite stored it. Both now refuse it alike.
#[tokio::test]
async fn a_nul_character_is_422_in_a_body_and_404_in_a_path_on_every_backend() {
    let (server, agent) = server().await;
    let owner = &server.owner_token;
    let audit_before = audit_records(&server).await.len();
    for (path, token, body) in [
        (
            "/v1/calls",
            agent.as_str(),
            r#"{"tool":"email.send","arguments":{"to":"a\u0000b"}}"#,
        ),
        (
            "/v1/calls",
            agent.as_str(),
            r#"{"tool":"x\u0000","arguments":{}}"#,
        ),
        ("/v1/sessions", owner.as_str(), r#"{"title":"t\u0000"}"#),
        (
            "/v1/approvals/decisions",
            owner.as_str(),
            r#"{"items":[{"id":"apr_\u0000","binding_digest":"x","decision":"approve"}]}"#,
        ),
    ] {
        assert_invalid(&post_raw(&server, path, token, body).await, "U+0000");
    }
    assert_eq!(audit_records(&server).await.len(), audit_before);
    // An escaped backslash before `u0000` is no NUL.
    let reply = post_raw(
        &server,
        "/v1/calls",
        &agent,
        r#"{"tool":"email.send","arguments":{"to":"a\\u0000b@x.test"}}"#,
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.text);
    for path in [
        "/v1/calls/call_%00",
        "/v1/approvals/apr_%00",
        "/v1/sessions/x%00",
    ] {
        let reply = server.client.get(path, owner).await.unwrap();
        assert_eq!(reply.status, 404, "{path}: {}", reply.text);
    }
}
