//! Codex 0.169.0 used interactively: the real `codex` TUI (no `exec`) under a
//! pseudo-terminal, offline against the fake OpenAI Responses model, with the guide's
//! `hooks.json` and the command line docs/integrations/codex.md gives for interactive use.
//! The test does what a person does: trusts the hooks at Codex's "Hooks need review"
//! prompt, then types three prompts into one session. The model runs the command each
//! prompt names, so one session shows an allowed call run and recorded, a denied one
//! refused with its reason reaching the model, and an asked one held in the hook until a
//! person approves it over HTTP, then run once.

use crate::codex::codex;
use crate::harness::{guide_block, Gateway, Place, Setup, DENY_REASON};
use crate::model::{FakeModel, Script};
use crate::scenarios::{self, refused};
use crate::terminal::Terminal;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// A backstop for each step; steps take seconds (longer beside busy CPUs).
const STEP: Duration = Duration::from_secs(90);

/// The guide's interactive command line, `codex` and its flags (run with `CODEX_HOME`
/// holding the guide's files).
fn interactive_flags() -> Vec<String> {
    let line = guide_block("codex.md", "In interactive use:", "sh");
    let mut words = line.split_whitespace().map(str::to_owned);
    assert_eq!(words.next().as_deref(), Some("codex"), "{line}");
    words.collect()
}

/// How many hooks the guide's `hooks.json` configures (each is trusted on its own).
const GUIDE_HOOKS: usize = 3;

#[test]
fn interactive_session_is_gated_on_every_call() {
    let gateway = Gateway::start();
    let place = Place::new();
    let model = FakeModel::start(Script::prompted());
    let setup = scenarios::setup(&place, &model, &gateway, 55);
    let tui = start_trusted(&setup);
    let why = |what: &str| format!("{what}\nthe model read: {:#?}", model.results());

    // (a) Allowed: it runs, airlock recorded the call and consumed its grant.
    prompt(&tui, &model, "touch allowed.txt", 1);
    tui.wait_until(STEP, "the allowed call's result", || {
        model.results().len() == 1
    });
    assert!(!refused(&model.results()[0]), "{}", why("allowed"));
    assert!(
        place.project.join("allowed.txt").exists(),
        "{}",
        why("allowed")
    );
    assert_eq!(gateway.consumed_grants(), 1, "{}", why("allowed"));
    let call = recorded_call(&gateway);
    assert_eq!(call["tool"], "shell.exec", "{call}");
    assert_eq!(call["arguments"]["command"], "touch allowed.txt", "{call}");
    assert_eq!(call["native_tool"], "Bash", "{call}");
    assert_eq!(call["status"], "allowed", "{call}");

    // (b) Denied: it does not run, and the next request to the model carries the reason.
    prompt(&tui, &model, "touch forbidden.txt", 2);
    tui.wait_until(STEP, "the denied call's result", || {
        model.results().len() == 2
    });
    assert!(
        model.results()[1].contains(DENY_REASON),
        "{}",
        why("denied")
    );
    assert!(
        !place.project.join("forbidden.txt").exists(),
        "{}",
        why("denied")
    );
    assert_eq!(gateway.consumed_grants(), 1, "{}", why("denied"));

    // (c) Asked: the hook holds the call until a person approves it, then it runs once.
    prompt(&tui, &model, "touch asked.txt", 3);
    let mut pending = Vec::new();
    tui.wait_until(STEP, "the asked call's approval", || {
        pending = gateway.server.pending();
        !pending.is_empty()
    });
    // Held: nothing ran and the model has heard nothing while nobody decided.
    assert!(
        !place.project.join("asked.txt").exists(),
        "{}",
        why("asked")
    );
    assert_eq!(model.results().len(), 2, "{}", why("asked"));
    crate::harness::approve(
        &gateway.server.url,
        &gateway.server.owner_token(),
        &pending[0],
    );
    tui.wait_until(STEP, "the asked call's result", || {
        model.results().len() == 3
    });
    assert!(!refused(&model.results()[2]), "{}", why("approved"));
    assert!(
        place.project.join("asked.txt").exists(),
        "{}",
        why("approved")
    );
    assert_eq!(gateway.consumed_grants(), 2, "{}", why("approved"));
    assert_eq!(gateway.approvals().len(), 1, "{}", why("approved"));
    // PostToolUse reported that both calls that ran succeeded.
    gateway.all_reported(&why("outcomes"));
}

/// What Codex 0.169 prints when it quits because its hook-trust dialog could not drain
/// the terminal's pending input within its own 1 s deadline (it drains input before a
/// security decision, so that keys typed earlier cannot answer it). A loaded machine
/// (the two CPU hogs of the robustness runs) gets there about once in ten starts.
const TRUST_DIALOG_GAVE_UP: &str = "timed out discarding buffered terminal input";

/// Starts the guide's interactive Codex and trusts its hooks. Codex is started again
/// (three starts at most) only when it quit at the trust dialog with
/// [`TRUST_DIALOG_GAVE_UP`], before any call: that is Codex's own deadline, not airlock's.
fn start_trusted(setup: &Setup) -> Terminal {
    for _ in 0..3 {
        let mut command = codex(setup);
        command.args(interactive_flags());
        let tui = Terminal::start(command);
        if trust_the_hooks(&tui, &setup.place.home.join(".codex")) {
            return tui;
        }
        assert!(
            tui.shows(TRUST_DIALOG_GAVE_UP),
            "Codex exited at start; the screen:\n{}",
            tui.screen()
        );
        println!("Codex quit at its hook-trust dialog ({TRUST_DIALOG_GAVE_UP}); starting it again");
    }
    panic!("Codex quit at its trust dialog three times: {TRUST_DIALOG_GAVE_UP}");
}

/// Answers Codex's "Hooks need review" prompt at start with "Trust all and continue", as
/// the guide says, and waits until Codex saved the trust of every hook in `config.toml`
/// and shows its prompt. `false`: Codex exited before it asked or while it asked.
fn trust_the_hooks(tui: &Terminal, codex_home: &Path) -> bool {
    let asked = tui.until_or_exit(STEP, "Codex's hook-trust dialog", || {
        tui.shows("Hooks need review") && tui.shows("2. Trust all and continue")
    });
    // Keys typed while Codex is still starting are lost: "2" (which only selects) is
    // typed again until the selection shows.
    if !asked || !tui.press_until(STEP, "2", "› 2. Trust all and continue") {
        return false;
    }
    tui.keys("\r");
    let saved = codex_home.join("config.toml");
    tui.wait_until(STEP, "the hooks' trust saved in config.toml", || {
        std::fs::read_to_string(&saved)
            .is_ok_and(|text| text.matches("trusted_hash").count() == GUIDE_HOOKS)
    });
    tui.wait_until(STEP, "Codex's prompt", || {
        tui.shows("Ask Codex to do anything") && !tui.shows("Hooks need review")
    });
    true
}

/// Types `run: COMMAND` and Enter, and waits until the model has made its `nth` call.
fn prompt(tui: &Terminal, model: &FakeModel, command: &str, nth: usize) {
    let text = format!("run: {command}");
    tui.paste(&text);
    tui.wait_for(&format!("› {text}"), STEP);
    tui.keys("\r");
    tui.wait_until(STEP, &format!("the model to be asked to {text}"), || {
        model.calls_made() == nth
    });
}

/// The newest call whose grant airlock consumed.
fn recorded_call(gateway: &Gateway) -> Value {
    let audit = gateway.server.get_json("/v1/audit?limit=1000");
    let consumed = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|record| record["kind"] == "grant.consumed")
        .unwrap_or_else(|| panic!("no grant.consumed in {audit}"));
    let id = consumed["data"]["call_id"].as_str().unwrap();
    gateway.server.get_json(&format!("/v1/calls/{id}"))
}
