//! The scripted turns every agent goes through, written once: the agent's module gives
//! how to launch it with its guide's configuration ([`Launch`]), these drive the model,
//! the person and the gateway, and check the outcome on three sides — the file the tool
//! would make, what the model read back, and airlock's approvals, grants and the outcomes
//! the guide's after-the-fact hook reported.

use crate::harness::{
    approve, dead_url, hung_url, run, Finished, Gateway, Place, Running, Setup, DENY_REASON,
};
use crate::model::{FakeModel, Script};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

/// Starts one agent run, configured as its guide says, against the setup's gateway.
pub type Launch = fn(&Setup) -> Command;

/// What a failed assertion shows: the agent's output and what the model read.
fn context(finished: &Finished, model: &FakeModel) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}\n--- tool results the model read\n{:#?}",
        finished.code,
        finished.stdout,
        finished.stderr,
        model.results()
    )
}

pub fn setup<'a>(
    place: &'a Place,
    model: &'a FakeModel,
    gateway: &Gateway,
    wait: u64,
) -> Setup<'a> {
    Setup {
        place,
        model,
        url: gateway.server.url.clone(),
        token: gateway.token.clone(),
        wait,
    }
}

/// An allowed call runs (its grant consumed first), and the model reads its result; a
/// denied one does not run, and the model reads airlock's reason.
pub fn allow_and_deny(launch: Launch) {
    let gateway = Gateway::start();

    let place = Place::new();
    let model = FakeModel::start(Script::call("touch allowed.txt"));
    let finished = run(launch(&setup(&place, &model, &gateway, 55)));
    let why = context(&finished, &model);
    assert!(place.project.join("allowed.txt").exists(), "{why}");
    assert_eq!(model.results().len(), 1, "{why}");
    assert!(!refused(&model.results()[0]), "{why}");
    assert_eq!(gateway.consumed_grants(), 1, "{why}");
    // The guide's after-the-fact hook told airlock the call ran (§11.8).
    gateway.all_reported(&why);

    let place = Place::new();
    let model = FakeModel::start(Script::call("touch forbidden.txt"));
    let finished = run(launch(&setup(&place, &model, &gateway, 55)));
    let why = context(&finished, &model);
    assert!(!place.project.join("forbidden.txt").exists(), "{why}");
    assert_eq!(model.results().len(), 1, "{why}");
    assert!(model.results()[0].contains(DENY_REASON), "{why}");
    assert_eq!(
        gateway.consumed_grants(),
        1,
        "no grant for a denied call: {why}"
    );
}

/// An asked call waits in the hook; a person approves it meanwhile; it runs.
pub fn ask_then_approve_while_waiting(launch: Launch) {
    let gateway = Gateway::start();
    let place = Place::new();
    let model = FakeModel::start(Script::call("touch asked.txt"));
    let agent = Running::start(launch(&setup(&place, &model, &gateway, 55)));
    gateway.approve_when_pending();
    let finished = agent.finish();
    let why = context(&finished, &model);
    assert!(place.project.join("asked.txt").exists(), "{why}");
    assert_eq!(model.results().len(), 1, "{why}");
    assert!(!refused(&model.results()[0]), "{why}");
    assert_eq!(gateway.consumed_grants(), 1, "{why}");
    assert_eq!(gateway.approvals().len(), 1, "{why}");
    gateway.all_reported(&why);
}

/// The hook's wait (2 s) ends before anyone decides: the model reads "still pending …
/// try the call again". A person approves after that, the model retries the identical
/// call, and the retry adopts the approval: the tool runs, and there was only ever one
/// approval. (Depends on the gate's late-approval adoption.)
pub fn late_approval_then_retry(launch: Launch) {
    let gateway = Gateway::start();
    let place = Place::new();
    let (url, owner) = (gateway.server.url.clone(), gateway.server.owner_token());
    let approved = std::sync::Arc::new(AtomicBool::new(false));
    let flag = approved.clone();
    let model = FakeModel::start(Script {
        command: "touch late.txt".into(),
        calls: 2,
        escalate: false,
        prompted: false,
        on_result: Some(Box::new(move |result: &str| {
            // Between the hook's deny and the model's retry: the person approves.
            if result.contains("still pending") && !flag.swap(true, Ordering::SeqCst) {
                let id = approval_in(result).expect("the deny names the approval");
                approve(&url, &owner, &id);
            }
        })),
    });
    let finished = run(launch(&setup(&place, &model, &gateway, 2)));
    let why = context(&finished, &model);
    assert!(approved.load(Ordering::SeqCst), "{why}");
    let results = model.results();
    assert_eq!(results.len(), 2, "{why}");
    assert!(results[0].contains("still pending"), "{why}");
    assert!(place.project.join("late.txt").exists(), "{why}");
    assert!(!refused(&results[1]), "{why}");
    assert_eq!(gateway.approvals().len(), 1, "one approval, adopted: {why}");
    assert_eq!(gateway.consumed_grants(), 1, "{why}");
    gateway.all_reported(&why);
}

/// Whether a tool result is a refusal by airlock rather than the tool's own output.
pub fn refused(result: &str) -> bool {
    [
        "still pending",
        "could not decide",
        "denied by airlock",
        "rejected by",
        "blocked",
    ]
    .iter()
    .any(|word| result.contains(word))
}

/// The approval id (`apr_…`) named in a deny.
fn approval_in(text: &str) -> Option<String> {
    let start = text.find("apr_")?;
    let id: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect();
    Some(id)
}

/// The gateway is down: the hook cannot decide, the call is blocked (the tool did not
/// run), and the model reads why.
/// The gateway is down (or the hook cannot even start) and the agent itself blocks the
/// call, having no answer at all (Claude Code's `"onFailure": "block"`): the command does
/// not run, and the model reads the agent's refusal, which `says` that.
pub fn gateway_down_blocks_without_an_answer(launch: Launch, says: &str) {
    let place = Place::new();
    let model = FakeModel::start(Script::call("touch down.txt"));
    let setup = Setup {
        place: &place,
        model: &model,
        url: dead_url(),
        token: "al_agent_nobody".into(),
        wait: 55,
    };
    let finished = run(launch(&setup));
    let why = context(&finished, &model);
    assert!(!place.project.join("down.txt").exists(), "{why}");
    let results = model.results();
    assert_eq!(results.len(), 1, "{why}");
    assert!(results[0].contains(says), "{why}");
}

/// The gateway accepts the hook's connection and never answers: the hook answers a deny
/// itself at its deadline (`--wait` + 3 s), well before the agent's own hook timeout, so the
/// command does not run and the model reads why.
pub fn hung_gateway_fails_closed_in_time(launch: Launch) {
    let place = Place::new();
    let model = FakeModel::start(Script::call("touch hung.txt"));
    let setup = Setup {
        place: &place,
        model: &model,
        url: hung_url(),
        token: "al_agent_nobody".into(),
        wait: 2,
    };
    let finished = run(launch(&setup));
    let why = context(&finished, &model);
    assert!(!place.project.join("hung.txt").exists(), "{why}");
    let results = model.results();
    assert_eq!(results.len(), 1, "{why}");
    assert!(results[0].contains("did not answer in time"), "{why}");
}

pub fn gateway_down_fails_closed(launch: Launch) {
    let place = Place::new();
    let model = FakeModel::start(Script::call("touch down.txt"));
    let setup = Setup {
        place: &place,
        model: &model,
        url: dead_url(),
        token: "al_agent_nobody".into(),
        wait: 55,
    };
    let finished = run(launch(&setup));
    let why = context(&finished, &model);
    assert!(!place.project.join("down.txt").exists(), "{why}");
    assert_eq!(model.calls_made(), 1, "{why}");
    let results = model.results();
    assert_eq!(results.len(), 1, "{why}");
    assert!(results[0].contains("could not decide"), "{why}");
}
