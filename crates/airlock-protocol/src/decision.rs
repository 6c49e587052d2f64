//! The policy's verdict on one call and the enums it is made of.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// What the policy says about a call.
///
/// INVARIANT: the derive order is the strictness order (`Allow < Ask < Deny`), so combining
/// several verdicts is `max()` and "strictest wins" cannot be written the wrong way round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The call may run without a person.
    Allow,
    /// A person must approve the call first.
    Ask,
    /// The call must not run; no role, standing rule or mode can change that.
    Deny,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Decision {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "allow" => Ok(Decision::Allow),
            "ask" => Ok(Decision::Ask),
            "deny" => Ok(Decision::Deny),
            other => Err(format!(
                "unknown decision `{other}`, expected one of: allow, ask, deny"
            )),
        }
    }
}

/// How much harm a tool can do. Ordered from least to most dangerous.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Only reads state.
    Read,
    /// Changes state inside the system the agent works on.
    Write,
    /// Reaches outside: email, webhooks, third-party APIs.
    External,
    /// Runs arbitrary code. Tools absent from the catalogue are treated as `exec`.
    Exec,
}

impl Risk {
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Read => "read",
            Risk::Write => "write",
            Risk::External => "external",
            Risk::Exec => "exec",
        }
    }
}

impl fmt::Display for Risk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An agent's (or session's) mode, DESIGN.md §4.4.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Decisions as evaluated.
    #[default]
    Ask,
    /// Anything whose risk is not `read` is denied; standing rules are ignored.
    ReadOnly,
    /// Nobody is there to ask: `ask` becomes `deny`.
    Unattended,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Ask => "ask",
            Mode::ReadOnly => "read_only",
            Mode::Unattended => "unattended",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "ask" => Ok(Mode::Ask),
            "read_only" => Ok(Mode::ReadOnly),
            "unattended" => Ok(Mode::Unattended),
            other => Err(format!(
                "unknown mode `{other}`, expected one of: ask, read_only, unattended"
            )),
        }
    }
}

/// Which step of evaluation produced the final decision (the `decided_by` of a Call).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// A `[[rules]]` entry matched; `Verdict::rule` names it.
    Rule,
    /// A standing rule turned an `ask` into `allow`; `Verdict::standing_rule` names it.
    StandingRule,
    /// No rule matched; the policy's `default` applied.
    PolicyDefault,
    /// The agent's mode tightened the decision.
    Mode,
    /// Secret material in an asked call turned it into a deny.
    Secrets,
    /// A person decided (set by the gate, never by the policy engine).
    Human,
    /// The system decided: an internal error, an expiry, a cancellation.
    System,
}

/// One kind of secret material found in a call's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SecretFinding {
    /// Stable slug of the kind, such as `aws_access_key` or `url_password`.
    pub kind: String,
    /// Dotted path of the argument that holds it (`headers.Authorization`, `items.0`).
    pub path: String,
}

/// The policy engine's answer for one call. Always a value: trouble is a `Deny` with a reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Verdict {
    pub decision: Decision,
    /// Which evaluation step settled the decision.
    pub decided_by: DecidedBy,
    /// The cited rule: its `name`, or `rules[N]` (zero-based) when it has none.
    pub rule: Option<String>,
    /// Why, in words a person or a model can read.
    pub reason: Option<String>,
    /// The tool's risk class from the catalogue (`exec` when the tool is not listed).
    pub risk: Risk,
    /// The value of the tool's `target` argument, when the catalogue names one and the call
    /// carries it as a scalar.
    pub target: Option<String>,
    /// The id of the standing rule that allowed the call, when one did.
    pub standing_rule: Option<String>,
    /// Secret material found in the arguments (kinds and places, never the values).
    pub secrets: Vec<SecretFinding>,
    /// For an `ask`: how long a person has to decide (the rule's `deadline`, else the
    /// policy's), in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_seconds: Option<u64>,
    /// For an `ask` under the two-person rule: how many distinct people must approve
    /// (DESIGN.md §11.6). Absent when one is enough.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals: Option<u32>,
    /// For an `ask`: who may decide (`approvers` of the rule: roles or `user:<name>`).
    /// Empty: every approver.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvers: Vec<String>,
}
