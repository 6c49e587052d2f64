//! No secrets at rest (G9): an asked call whose arguments hold an API key is denied as
//! "cannot be approved exactly", and the key's bytes are in no database file afterwards.

use crate::support::{audit_records, server, unique_api_key};
use serde_json::json;

#[tokio::test]
async fn asked_call_with_an_api_key_is_denied_and_the_key_is_stored_nowhere() {
    let (server, agent) = server().await;
    let key = unique_api_key();
    let aws = format!("AKIA{}", &key.to_uppercase().replace(['-', '_'], "")[..16]);
    let arguments = json!({"to": "bob@acme.test", "body": format!("use {key} and {aws}")});

    let reply = server
        .submit(&agent, "email.send", arguments)
        .await
        .unwrap();
    assert_eq!(reply.status, 201, "{}", reply.text);
    assert_eq!(reply.body["status"], "denied");
    assert_eq!(reply.body["decided_by"], "secrets");
    assert!(
        reply.body["reason"]
            .as_str()
            .unwrap()
            .contains("cannot be approved exactly"),
        "{}",
        reply.text
    );
    assert!(reply.body["approval_id"].is_null());
    assert!(
        !reply.text.contains(&key) && !reply.text.contains(&aws),
        "{}",
        reply.text
    );

    let pending = server
        .client
        .get("/v1/approvals", &server.owner_token)
        .await
        .unwrap()
        .expect_status(200)
        .unwrap();
    assert_eq!(pending["items"], json!([]));
    let audit = serde_json::to_string(&audit_records(&server).await).unwrap();
    assert!(audit.contains("call.denied"));
    assert!(!audit.contains(&key) && !audit.contains(&aws));

    let bytes = server.database_bytes().await.unwrap();
    assert!(!bytes.is_empty(), "no database content to search");
    // The search can fail: the agent's name is stored, and is found.
    assert!(
        bytes.windows(5).any(|w| w == b"scout"),
        "the search sees nothing"
    );
    for secret in [&key, &aws] {
        let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
        assert!(
            !found,
            "{secret} found in the database ({:?})",
            server.backend
        );
    }
}
