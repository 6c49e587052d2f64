//! The built-in coding-agent policy (DESIGN.md §11.4): what `airlock serve` enforces with
//! no `--policy`, what `airlock policy show-default` prints and `airlock policy init`
//! writes to start from.

use crate::load::{LoadErrors, LoadOptions, Policy};

/// The built-in coding-agent policy, as TOML text.
pub const DEFAULT_POLICY: &str = include_str!("defaults/coding-agent.toml");

/// The name load errors and explanations give the built-in policy.
pub const DEFAULT_POLICY_NAME: &str = "(built-in coding-agent policy)";

impl Policy {
    /// Loads [`DEFAULT_POLICY`]. It always loads (a test pins that); the error is there so
    /// that a caller can still fail closed if a build ever broke it.
    pub fn default_policy() -> Result<Policy, LoadErrors> {
        Policy::load(
            DEFAULT_POLICY,
            &LoadOptions {
                file_name: DEFAULT_POLICY_NAME.to_string(),
                ..LoadOptions::default()
            },
        )
    }
}
