//! The API key: read from the named variable, sent as a bearer token, shown nowhere.

use airlock_llm::fake::{FakeOpenAi, FakeReply};
use airlock_llm::{LlmError, OpenAiClient};

use super::harness::{complete, config, fast_options, request};

#[tokio::test]
async fn the_key_from_the_named_variable_is_sent_as_bearer() {
    let secret = "sk-airlock-llm-test-4f2a9c";
    std::env::set_var("AIRLOCK_LLM_TEST_KEY_SENT", secret);
    let fake = FakeOpenAi::start().await;
    fake.push(FakeReply::Status(
        401,
        r#"{"error":{"message":"invalid key"}}"#.into(),
    ));
    fake.push(FakeReply::Text("ok".into()));
    let mut config = config(&fake, false);
    config.api_key_env = Some("AIRLOCK_LLM_TEST_KEY_SENT".into());
    let client = OpenAiClient::new(&config, fast_options()).unwrap();

    let debug = format!("{client:?}");
    assert!(!debug.contains(secret), "{debug}");
    assert!(debug.contains("redacted"), "{debug}");

    let (result, _) = complete(&client, &request("hi")).await;
    let error = result.unwrap_err();
    assert!(
        matches!(error, LlmError::Status { status: 401, .. }),
        "{error:?}"
    );
    assert!(!error.to_string().contains(secret));
    assert!(!format!("{error:?}").contains(secret));

    complete(&client, &request("hi")).await.0.unwrap();
    for headers in fake.headers() {
        let authorization: Vec<&str> = headers
            .iter()
            .filter(|(name, _)| name == "authorization")
            .map(|(_, value)| value.as_str())
            .collect();
        assert_eq!(authorization, [format!("Bearer {secret}")]);
    }
    assert_eq!(fake.headers().len(), 2);
}

#[tokio::test]
async fn a_named_but_unset_variable_is_a_config_error() {
    let fake = FakeOpenAi::start().await;
    let mut config = config(&fake, false);
    config.api_key_env = Some("AIRLOCK_LLM_TEST_KEY_NEVER_SET".into());
    let error = OpenAiClient::new(&config, fast_options()).unwrap_err();
    match error {
        LlmError::Config(message) => assert!(message.contains("AIRLOCK_LLM_TEST_KEY_NEVER_SET")),
        other => panic!("expected Config, got {other:?}"),
    }

    std::env::set_var("AIRLOCK_LLM_TEST_KEY_EMPTY", "  ");
    config.api_key_env = Some("AIRLOCK_LLM_TEST_KEY_EMPTY".into());
    let error = OpenAiClient::new(&config, fast_options()).unwrap_err();
    assert!(matches!(error, LlmError::Config(_)), "{error:?}");
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn a_bad_base_url_is_a_config_error() {
    let fake = FakeOpenAi::start().await;
    let mut config = config(&fake, false);
    config.base_url = "127.0.0.1:8080/v1".into();
    let error = OpenAiClient::new(&config, fast_options()).unwrap_err();
    match error {
        LlmError::Config(message) => assert!(message.contains("bad base URL"), "{message}"),
        other => panic!("expected Config, got {other:?}"),
    }
}
