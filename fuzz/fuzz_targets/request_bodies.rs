//! The HTTP API's JSON request bodies, through the server's own body parser: never a
//! panic, and every refusal is a 4xx (400 not JSON, 422 wrong shape), never a 5xx. The
//! first byte picks the request type.

#![no_main]

use airlock_server::body::parse_json;
use airlock_server::error::ApiError;
use axum::response::IntoResponse;
use libfuzzer_sys::fuzz_target;
use serde::de::DeserializeOwned;

fn check<T: DeserializeOwned>(bytes: &[u8]) {
    if let Err(error) = parse_json::<T>(bytes) {
        let error: ApiError = error;
        let status = error.into_response().status();
        assert!(status.is_client_error(), "a body was refused with {status}");
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&pick, body)) = input.split_first() else {
        return;
    };
    use airlock_gate as gate;
    use airlock_server::handlers as h;
    match pick % 12 {
        0 => check::<h::calls::SubmitCall>(body),
        1 => check::<h::identity::NewUser>(body),
        2 => check::<h::identity::NewSession>(body),
        3 => check::<h::runs::NewMessage>(body),
        4 => check::<h::policy::EvaluateRequest>(body),
        5 => check::<h::hooks::ClaudeCodeHook>(body),
        6 => check::<gate::decide::DecisionRequest>(body),
        7 => check::<gate::tasks::NewTask>(body),
        8 => check::<gate::tasks::TaskPatch>(body),
        9 => check::<gate::rules::NewRule>(body),
        10 => check::<gate::identity::AgentSpec>(body),
        _ => check::<gate::identity::AgentPatch>(body),
    }
});
