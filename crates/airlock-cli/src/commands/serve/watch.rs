//! Reloading `airlock serve --policy FILE` when the file changes.
//!
//! The file is read once a second and compared with the text last tried, so an edit is
//! picked up however coarse the file system's timestamps are, and a bad edit is reported
//! once rather than every second. A text that does not load never reaches the gate: the
//! policy in force stays (DESIGN.md §4.3). A good edit goes through
//! `Gate::replace_policy`, which also cancels approvals pending under the old policy.

use super::load_options;
use airlock_gate::Gate;
use airlock_policy::Policy;
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often the file is looked at.
const POLL: Duration = Duration::from_secs(1);

/// Watches `file` until `stop`; `loaded` is the text that is in force now.
pub async fn watch_policy(
    gate: Gate,
    workspace: String,
    file: PathBuf,
    loaded: String,
    stop: CancellationToken,
) {
    let mut last_tried = loaded;
    let mut unreadable = false;
    let mut ticks = tokio::time::interval(POLL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let text = match tokio::fs::read_to_string(&file).await {
            Ok(text) => {
                unreadable = false;
                text
            }
            Err(error) => {
                // An editor that saves by rename leaves a short gap; say it once.
                if !unreadable {
                    eprintln!(
                        "policy {}: cannot read it ({error}); the policy in force stays",
                        file.display()
                    );
                }
                unreadable = true;
                continue;
            }
        };
        if text == last_tried {
            continue;
        }
        last_tried.clone_from(&text);
        if let Err(errors) = Policy::load(&text, &load_options(&file)) {
            eprintln!(
                "policy {} was edited but does not load; the policy in force stays:\n{errors}",
                file.display()
            );
            continue;
        }
        match gate.replace_policy(&workspace, "policy", &text).await {
            Ok(info) => eprintln!(
                "policy {} reloaded: version {}, digest {}",
                file.display(),
                info.version,
                info.digest
            ),
            Err(error) => eprintln!(
                "policy {} could not be put in force ({error}); the policy in force stays",
                file.display()
            ),
        }
    }
}
