//! The config file's parsing and resolution, table by table: what is refused before the
//! server starts, and what each channel resolves to.

use super::*;

fn settings(text: &str) -> Result<Option<Settings>, ConfigError> {
    let env = |name: &str| (name == "HOOK_KEY").then(|| "k3y".to_owned());
    ServerConfig::parse(text, "airlock.toml")?.notification_settings(&env, None)
}

#[test]
fn unknown_keys_are_refused_with_their_name() {
    for (text, key) in [
        ("[notification]\n", "notification"),
        ("[notifications]\npublic_ur = \"http://x\"\n", "public_ur"),
        (
            "[[notifications.webhooks]]\nurl = \"http://x\"\nsecret = \"k\"\n",
            "secret",
        ),
        ("[notifications.email]\nto = []\nfrom = \"x\"\n", "from"),
    ] {
        let error = settings(text).unwrap_err().to_string();
        assert!(
            error.contains(key) && error.contains("airlock.toml"),
            "{error}"
        );
    }
}

#[test]
fn channels_are_resolved_and_checked() {
    let text = r#"
        [notifications]
        public_url = "https://airlock.example/"
        link_ttl = "2h"
        retry = { initial = "200ms", max = "1s", attempts = 3 }
        [[notifications.webhooks]]
        url = "https://hooks.example/a"
        secret_env = "HOOK_KEY"
        min_risk = "external"
        user = "alice"
        [[notifications.webhooks]]
        name = "slack"
        url = "https://hooks.slack.example/T/B"
        format = "slack"
        [notifications.email]
        to = ["alice@acme.test", "bob@acme.test"]
        smtp = { host = "127.0.0.1", port = 2525 }
    "#;
    let settings = settings(text).unwrap().unwrap();
    assert_eq!(
        settings.public_url.as_deref(),
        Some("https://airlock.example")
    );
    assert_eq!(settings.link_ttl, Duration::from_secs(7200));
    let names: Vec<_> = settings.channels.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "webhooks[0]",
            "slack",
            "email:alice@acme.test",
            "email:bob@acme.test"
        ]
    );
    assert!(matches!(
        &settings.channels[0].target,
        Target::Webhook { secret: Some(key), .. } if key == b"k3y"
    ));
    assert_eq!(settings.channels[0].min_risk, Some(Risk::External));
    let retry = settings.retry;
    let delays: Vec<_> = (1..=5).map(|n| retry.delay(n).as_millis()).collect();
    assert_eq!(delays, [200, 400, 800, 1000, 1000]);
}

#[test]
fn what_cannot_work_is_refused_before_starting() {
    for (text, expected) in [
        (
            "[[notifications.webhooks]]\nurl = \"https://h/x\"\n",
            "secret_env is required",
        ),
        (
            "[[notifications.webhooks]]\nurl = \"https://h/x\"\nsecret_env = \"NOPE\"\n",
            "NOPE is not set",
        ),
        (
            "[[notifications.webhooks]]\nurl = \"ftp://h\"\nsecret_env = \"HOOK_KEY\"\n",
            "http",
        ),
        ("[notifications.email]\nto = [\"a@b\"]\n", "SMTP"),
        (
            "[notifications.email]\nto = [\"a b@c\"]\nsmtp = { host = \"h\", port = 25 }\n",
            "one address",
        ),
        (
            "[notifications]\nlink_ttl = \"soon\"\n[notifications.email]\nto = [\"a@b\"]\n",
            "duration",
        ),
        (
            "[[notifications.webhooks]]\nname = \"x\"\nurl = \"https://h\"\nformat = \"slack\"\n\
             [[notifications.webhooks]]\nname = \"x\"\nurl = \"https://h\"\nformat = \"slack\"\n",
            "two channels",
        ),
        (
            "[[notifications.webhooks]]\nurl = \"https://h\"\nformat = \"xml\"\n",
            "xml",
        ),
    ] {
        let error = settings(text).unwrap_err().to_string();
        assert!(error.contains(expected), "{text}: {error}");
    }
    for (text, expected) in [
        (
            "[notifications.slack]\nchannel = \"C1\"\nbot_token_env = \"NOPE\"\n\
             signing_secret_env = \"HOOK_KEY\"\n",
            "NOPE is not set",
        ),
        (
            "[notifications.slack]\nchannel = \"#general\"\nbot_token_env = \"HOOK_KEY\"\n\
             signing_secret_env = \"HOOK_KEY\"\n",
            "conversation id",
        ),
        (
            "[notifications.slack]\nchannel = \"C1\"\nbot_token_env = \"HOOK_KEY\"\n\
             signing_secret_env = \"HOOK_KEY\"\nusers = { \"a b\" = \"alice\" }\n",
            "Slack user id",
        ),
        (
            "[notifications.slack]\nchannel = \"C1\"\nbot_token_env = \"HOOK_KEY\"\n\
             signing_secret_env = \"HOOK_KEY\"\nbuttons = true\n",
            "buttons",
        ),
    ] {
        let error = settings(text).unwrap_err().to_string();
        assert!(error.contains(expected), "{text}: {error}");
    }
    let slack = settings(
        "[notifications.slack]\nchannel = \"C1\"\nbot_token_env = \"HOOK_KEY\"\n\
         signing_secret_env = \"HOOK_KEY\"\napi_url = \"http://127.0.0.1:9/api/\"\n\
         users = { U1 = \"alice\" }\n",
    )
    .unwrap()
    .unwrap();
    let (channel, target) = slack.slack().unwrap();
    assert_eq!(channel.name, "slack");
    assert_eq!(target.api_url, "http://127.0.0.1:9/api");
    assert_eq!(target.users.get("U1").map(String::as_str), Some("alice"));
    assert!(settings("").unwrap().is_none());
    assert!(settings("[notifications]\n").unwrap().is_none());
}

#[test]
fn only_an_email_recipient_bound_to_a_user_gets_a_link_that_signs_in() {
    let users = |settings: &Settings| -> Vec<(String, Option<String>)> {
        settings
            .channels
            .iter()
            .map(|c| (c.name.clone(), c.user.clone()))
            .collect()
    };
    let smtp = "smtp = { host = \"127.0.0.1\", port = 2525 }";
    // One recipient: `user` is whom that address belongs to.
    let one = settings(&format!(
        "[notifications.email]\nto = [\"a@x\"]\nuser = \"alice\"\n{smtp}\n"
    ))
    .unwrap()
    .unwrap();
    assert_eq!(users(&one), [("email:a@x".into(), Some("alice".into()))]);
    assert!(one.warnings.is_empty());
    // Several: `user` cannot say whose each address is; `users` does.
    let several = settings(&format!(
        "[notifications.email]\nto = [\"a@x\", \"b@x\", \"c@x\"]\nuser = \"alice\"\n\
         users = {{ \"b@x\" = \"bob\" }}\n{smtp}\n"
    ))
    .unwrap()
    .unwrap();
    assert_eq!(
        users(&several),
        [
            ("email:a@x".into(), None),
            ("email:b@x".into(), Some("bob".into())),
            ("email:c@x".into(), None),
        ]
    );
    assert_eq!(several.warnings.len(), 1);
    assert!(several.warnings[0].contains("[notifications.email.users]"));
    // Shared channels never sign anyone in, whatever the file says.
    let shared = settings(
        "[[notifications.webhooks]]\nurl = \"https://h/x\"\nsecret_env = \"HOOK_KEY\"\n\
         user = \"alice\"\n\
         [notifications.slack]\nchannel = \"C1\"\nbot_token_env = \"HOOK_KEY\"\n\
         signing_secret_env = \"HOOK_KEY\"\nuser = \"alice\"\n",
    )
    .unwrap()
    .unwrap();
    assert!(shared.channels.iter().all(|c| c.user.is_none()));
    assert_eq!(shared.warnings.len(), 2, "{:?}", shared.warnings);
    // An address bound to a user must be one the mail goes to.
    let error = settings(&format!(
        "[notifications.email]\nto = [\"a@x\"]\nusers = {{ \"b@x\" = \"bob\" }}\n{smtp}\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("\"b@x\" is not one of the addresses"),
        "{error}"
    );
}

#[test]
fn smtp_credentials_need_tls_unless_explicitly_allowed_on_this_machine() {
    let email = |smtp: &str| {
        settings(&format!(
            "[notifications.email]\nto = [\"a@x\"]\n[notifications.email.smtp]\n{smtp}\n"
        ))
    };
    let login = "username = \"airlock\"\npassword_env = \"HOOK_KEY\"";
    for refused in [
        format!("host = \"smtp.acme.example\"\nport = 587\n{login}"),
        format!("host = \"127.0.0.1\"\nport = 25\n{login}"),
        format!("host = \"smtp.acme.example\"\nport = 25\n{login}\nplaintext_auth = true"),
    ] {
        let error = email(&refused).unwrap_err().to_string();
        assert!(
            error.contains("without TLS") || error.contains("clear text"),
            "{error}"
        );
    }
    for accepted in [
        format!("host = \"smtp.acme.example\"\nport = 587\n{login}\nstarttls = true"),
        format!("host = \"smtp.acme.example\"\nport = 465\n{login}"),
        format!("host = \"127.0.0.1\"\nport = 25\n{login}\nplaintext_auth = true"),
        "host = \"smtp.acme.example\"\nport = 25".to_owned(),
    ] {
        assert!(email(&accepted).is_ok(), "{accepted}");
    }
    // The AIRLOCK_SMTP* server: the variable says it instead of the file.
    let from_env = |allow: bool| {
        let env = move |name: &str| match name {
            PLAINTEXT_AUTH_ENV if allow => Some("1".to_owned()),
            _ => None,
        };
        let smtp = SmtpConfig {
            host: "localhost".into(),
            port: 25,
            from: "airlock@localhost".into(),
            username: Some("airlock".into()),
            password_env: Some("PW".into()),
            starttls: false,
        };
        ServerConfig::parse("[notifications.email]\nto = [\"a@x\"]\n", "airlock.toml")
            .unwrap()
            .notification_settings(&env, Some(smtp))
    };
    assert!(from_env(false).is_err());
    assert!(from_env(true).is_ok());
}

#[test]
fn attempts_have_a_timeout_inside_their_claim() {
    let with = |timeout: &str| {
        settings(&format!(
            "[notifications]\ntimeout = \"{timeout}\"\n\
             [[notifications.webhooks]]\nurl = \"https://h/x\"\nsecret_env = \"HOOK_KEY\"\n"
        ))
    };
    assert_eq!(with("5s").unwrap().unwrap().timeout, Duration::from_secs(5));
    assert!(with("101s")
        .unwrap_err()
        .to_string()
        .contains("at most 100s"));
    let default =
        settings("[[notifications.webhooks]]\nurl = \"https://h/x\"\nsecret_env = \"HOOK_KEY\"\n");
    assert_eq!(default.unwrap().unwrap().timeout, ATTEMPT_TIMEOUT);
}
