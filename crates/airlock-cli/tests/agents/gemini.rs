//! Gemini CLI 0.61.0 (`gemini -p`, offline against the fake Gemini API through
//! `GOOGLE_GEMINI_BASE_URL`), gated by the `BeforeTool` hook of
//! docs/integrations/gemini.md in the user's `~/.gemini/settings.json`, and its quirks:
//! the environment redaction of its hooks (strict under GitHub Actions) and a hook whose
//! stderr is lost.

use crate::harness::{guide_block, run, Gateway, Place, Setup};
use crate::model::{FakeModel, Script};
use crate::scenarios;
use serde_json::{json, Value};
use std::process::Command;

const GUIDE: &str = "gemini.md";

/// The guide's settings.
fn guide_settings() -> String {
    guide_block(GUIDE, "`~/.gemini/settings.json`", "json")
}

/// `gemini -p` with `settings` (plus the API-key login) as the user's
/// `~/.gemini/settings.json`, with the folder trusted for this run only (`--skip-trust`,
/// headless Gemini's way): the user's hooks run there, while Gemini 0.61 skipped a
/// project's `.gemini/settings.json` hooks silently in that case and ran the tool. Headless Gemini leaves shell tools out unless its approval mode lets them run
/// (`yolo`): airlock's hook, which runs before Gemini's own approval, is what gates them.
fn gemini_with(setup: &Setup, settings: &str) -> Command {
    let mut settings: Value = serde_json::from_str(settings).unwrap();
    settings["security"]["auth"] = json!({"selectedType": "gemini-api-key"});
    Place::write(
        &setup.place.home,
        ".gemini/settings.json",
        &settings.to_string(),
    );
    let mut command = setup.command("gemini");
    command
        .args(["-p", "run the scripted command", "-m", "gemini-2.5-flash"])
        .args(["--approval-mode", "yolo", "--skip-trust"])
        .env("GOOGLE_GEMINI_BASE_URL", &setup.model.url)
        .env("GEMINI_API_KEY", "fake-gemini-key");
    command
}

fn gemini(setup: &Setup) -> Command {
    gemini_with(setup, &setup.with_wait(&guide_settings()))
}

#[test]
fn allows_and_denies() {
    scenarios::allow_and_deny(gemini);
}

#[test]
fn waits_for_a_person() {
    scenarios::ask_then_approve_while_waiting(gemini);
}

#[test]
fn lets_the_retry_after_a_late_approval_through() {
    scenarios::late_approval_then_retry(gemini);
}

#[test]
fn fails_closed_when_the_gateway_is_down() {
    scenarios::gateway_down_fails_closed(gemini);
}

#[test]
fn fails_closed_in_time_when_the_gateway_hangs() {
    scenarios::hung_gateway_fails_closed_in_time(gemini);
}

/// Under GitHub Actions (`GITHUB_SHA` set) Gemini strips every variable it does not know
/// from its hooks' environment, `AIRLOCK_URL` and `AIRLOCK_TOKEN` included. With the
/// guide's allowlist they reach the hook and the allowed call runs; without it the hook
/// cannot decide and the call is blocked — never run.
#[test]
fn the_guides_allowlist_keeps_the_hooks_settings_under_strict_redaction() {
    let gateway = Gateway::start();
    let settings = guide_settings();

    let place = Place::new();
    let model = FakeModel::start(Script::call("touch allowed.txt"));
    let setup = setup(&place, &model, &gateway);
    let mut command = gemini_with(&setup, &settings);
    command.env("GITHUB_SHA", "0123abcd");
    let finished = run(command);
    assert!(
        place.project.join("allowed.txt").exists(),
        "{}\n{}\n{:?}",
        finished.stdout,
        finished.stderr,
        model.results()
    );

    let mut bare: Value = serde_json::from_str(&settings).unwrap();
    bare.as_object_mut().unwrap().remove("security").unwrap();
    let place = Place::new();
    let model = FakeModel::start(Script::call("touch allowed.txt"));
    let setup = self::setup(&place, &model, &gateway);
    let mut command = gemini_with(&setup, &bare.to_string());
    command.env("GITHUB_SHA", "0123abcd");
    let finished = run(command);
    let results = model.results();
    assert!(
        !place.project.join("allowed.txt").exists(),
        "{}\n{}\n{results:?}",
        finished.stdout,
        finished.stderr
    );
    assert!(results[0].contains("could not decide"), "{results:?}");
    assert_eq!(gateway.consumed_grants(), 1);
}

/// Gemini reads a hook's stdout, or its stderr when stdout is empty; exit 2 with nothing
/// to read is only a warning to it. A hook whose stderr goes nowhere still blocks,
/// because `airlock hook gemini` prints `{"decision":"deny",…}` on stdout too.
#[test]
fn a_hook_that_cannot_decide_blocks_even_with_its_stderr_lost() {
    let place = Place::new();
    let model = FakeModel::start(Script::call("touch down.txt"));
    let setup = Setup {
        place: &place,
        model: &model,
        url: crate::harness::dead_url(),
        token: "al_agent_nobody".into(),
        wait: 55,
    };
    let settings = guide_settings().replace("--wait 55", "--wait 55 2>/dev/null");
    let finished = run(gemini_with(&setup, &settings));
    let results = model.results();
    assert!(
        !place.project.join("down.txt").exists(),
        "{}\n{}\n{results:?}",
        finished.stdout,
        finished.stderr
    );
    assert!(results[0].contains("could not decide"), "{results:?}");
}

fn setup<'a>(place: &'a Place, model: &'a FakeModel, gateway: &Gateway) -> Setup<'a> {
    Setup {
        place,
        model,
        url: gateway.server.url.clone(),
        token: gateway.token.clone(),
        wait: 55,
    }
}
