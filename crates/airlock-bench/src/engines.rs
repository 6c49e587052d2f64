//! The corpus encoded for the three engines that BENCHMARKS.md compares: airlock's own
//! policy engine, `cedar-policy` and `regorus` (Rego).
//!
//! The corpus (see [`crate::corpus`]) gives each rule a tool glob, one argument glob and a
//! decision out of allow / ask / deny, with `default = "deny"` and strictest-wins. Cedar and
//! Rego have no three-valued answer, so each encoding says how it gets one:
//!
//! - **Cedar**: an allow rule is a `permit`, a deny rule a `forbid`, an ask rule a `permit`
//!   annotated `@decision("ask")`. Cedar's own answer is `Deny` when a `forbid` matched or
//!   nothing did (the corpus default); an `Allow` is an ask when one of the permits that
//!   caused it is an ask rule. One `is_authorized` call per request, globs as `like`.
//! - **Rego**: one definition of `deny_hit`, `ask_hit` or `allow_hit` per rule, each
//!   `glob.match` on the tool then on the argument; `decision` takes the strictest.
//!
//! Every engine implements [`Engine`]: a request is prepared once into the engine's own
//! input shape (outside any timing: parsing JSON is nobody's evaluation cost) and then
//! decided as often as the measurement wants.

use crate::corpus::{rule_decision, TrafficCall};
use airlock_policy::{Call, Decision, LoadOptions, Policy};
use serde_json::Value;
use std::collections::HashSet;
use std::fmt::Write;
use std::str::FromStr;
use std::sync::Arc;

/// An engine could not compile the corpus or answer a request.
#[derive(Debug, thiserror::Error)]
#[error("{engine}: {message}")]
pub struct EngineError {
    pub engine: &'static str,
    pub message: String,
}

impl EngineError {
    fn new(engine: &'static str, message: impl ToString) -> EngineError {
        EngineError {
            engine,
            message: message.to_string(),
        }
    }
}

/// One engine holding one compiled corpus. `Clone` gives another thread its own handle
/// (sharing the compiled policy where the engine allows it).
pub trait Engine: Clone + Send {
    /// A request in the engine's own input shape.
    type Input: Send + Sync;

    /// The engine's name in figures (`airlock`, `cedar`, `regorus`).
    const NAME: &'static str;

    /// Compiles the corpus policy with `rules` rules.
    fn compile(rules: usize) -> Result<Self, EngineError>;

    /// Turns a call into this engine's input.
    fn prepare(&self, call: &TrafficCall) -> Result<Self::Input, EngineError>;

    /// The corpus decision for one prepared request.
    fn decide(&mut self, input: &Self::Input) -> Result<Decision, EngineError>;
}

/// airlock's policy engine on the corpus text of [`crate::corpus::policy_text`].
#[derive(Clone)]
pub struct Airlock {
    policy: Arc<Policy>,
}

impl Engine for Airlock {
    type Input = TrafficCall;
    const NAME: &'static str = "airlock";

    fn compile(rules: usize) -> Result<Airlock, EngineError> {
        let text = crate::corpus::policy_text(rules);
        let policy = Policy::load(&text, &LoadOptions::default())
            .map_err(|errors| EngineError::new(Self::NAME, errors))?;
        Ok(Airlock {
            policy: Arc::new(policy),
        })
    }

    fn prepare(&self, call: &TrafficCall) -> Result<TrafficCall, EngineError> {
        Ok(call.clone())
    }

    fn decide(&mut self, input: &TrafficCall) -> Result<Decision, EngineError> {
        Ok(self
            .policy
            .evaluate(&Call::new(&input.tool, &input.arguments))
            .decision)
    }
}

/// The corpus as Cedar policies (see the module docs for the encoding).
pub fn cedar_text(rules: usize) -> String {
    let mut text = String::new();
    for i in 0..rules {
        let decision = rule_decision(i);
        let effect = if decision == Decision::Deny {
            "forbid"
        } else {
            "permit"
        };
        let _ = write!(
            text,
            "@decision(\"{decision}\")\n{effect} (principal, action, resource) when {{ context.tool like \"svc{i}.*\" && context.resource like \"res{i}/*\" }};\n"
        );
    }
    text
}

/// `cedar-policy` with the corpus; the policy set is shared between clones.
#[derive(Clone)]
pub struct Cedar {
    inner: Arc<CedarInner>,
}

struct CedarInner {
    policies: cedar_policy::PolicySet,
    authorizer: cedar_policy::Authorizer,
    entities: cedar_policy::Entities,
    /// The ids of the `permit`s that stand for ask rules.
    asks: HashSet<cedar_policy::PolicyId>,
}

impl Engine for Cedar {
    type Input = cedar_policy::Request;
    const NAME: &'static str = "cedar";

    fn compile(rules: usize) -> Result<Cedar, EngineError> {
        let policies = cedar_policy::PolicySet::from_str(&cedar_text(rules))
            .map_err(|error| EngineError::new(Self::NAME, error))?;
        let asks = policies
            .policies()
            .filter(|policy| policy.annotation("decision") == Some("ask"))
            .map(|policy| policy.id().clone())
            .collect();
        Ok(Cedar {
            inner: Arc::new(CedarInner {
                policies,
                authorizer: cedar_policy::Authorizer::new(),
                entities: cedar_policy::Entities::empty(),
                asks,
            }),
        })
    }

    fn prepare(&self, call: &TrafficCall) -> Result<cedar_policy::Request, EngineError> {
        let uid = |text: &str| {
            cedar_policy::EntityUid::from_str(text).map_err(|e| EngineError::new(Self::NAME, e))
        };
        let mut pairs = vec![(
            "tool".to_owned(),
            cedar_policy::RestrictedExpression::new_string(call.tool.clone()),
        )];
        if let Some(resource) = call.arguments.get("resource").and_then(Value::as_str) {
            pairs.push((
                "resource".to_owned(),
                cedar_policy::RestrictedExpression::new_string(resource.to_owned()),
            ));
        }
        let context = cedar_policy::Context::from_pairs(pairs)
            .map_err(|error| EngineError::new(Self::NAME, error))?;
        cedar_policy::Request::new(
            uid(r#"Agent::"bench""#)?,
            uid(r#"Action::"call""#)?,
            uid(r#"Tool::"any""#)?,
            context,
            None,
        )
        .map_err(|error| EngineError::new(Self::NAME, error))
    }

    fn decide(&mut self, input: &cedar_policy::Request) -> Result<Decision, EngineError> {
        let inner = &*self.inner;
        let response = inner
            .authorizer
            .is_authorized(input, &inner.policies, &inner.entities);
        if let Some(error) = response.diagnostics().errors().next() {
            return Err(EngineError::new(Self::NAME, error));
        }
        Ok(match response.decision() {
            cedar_policy::Decision::Deny => Decision::Deny,
            cedar_policy::Decision::Allow
                if response
                    .diagnostics()
                    .reason()
                    .any(|id| inner.asks.contains(id)) =>
            {
                Decision::Ask
            }
            cedar_policy::Decision::Allow => Decision::Allow,
        })
    }
}

/// The corpus as one Rego module (see the module docs for the encoding). One line per rule:
/// regorus refuses a module of more than 20,000 lines.
pub fn rego_text(rules: usize) -> String {
    let mut text = String::from(
        "package airlock\n\n\
         default deny_hit := false\n\
         default ask_hit := false\n\
         default allow_hit := false\n\n\
         default decision := \"deny\"\n\
         decision := \"ask\" if {\n\tnot deny_hit\n\task_hit\n}\n\
         decision := \"allow\" if {\n\tnot deny_hit\n\tnot ask_hit\n\tallow_hit\n}\n\n",
    );
    for i in 0..rules {
        let _ = writeln!(
            text,
            "{}_hit if {{ glob.match(\"svc{i}.*\", [], input.tool); glob.match(\"res{i}/*\", [], input.resource) }}",
            rule_decision(i)
        );
    }
    text
}

/// `regorus` with the corpus. Its interpreter needs `&mut`, so each clone is a whole engine
/// (the parsed modules are shared). `glob.match` compiles its pattern on every call unless
/// it is in regorus's global pattern cache, which [`Regorus::compile`] sizes to hold every
/// pattern of the corpus (two per rule), as its documentation advises.
#[derive(Clone)]
pub struct Regorus {
    engine: regorus::Engine,
}

impl Engine for Regorus {
    type Input = regorus::Value;
    const NAME: &'static str = "regorus";

    fn compile(rules: usize) -> Result<Regorus, EngineError> {
        regorus::cache::configure(regorus::cache::Config {
            regex: 0,
            glob: (2 * rules).max(1),
        });
        let mut engine = regorus::Engine::new();
        engine
            .add_policy("corpus.rego".to_owned(), rego_text(rules))
            .map_err(|error| EngineError::new(Self::NAME, error))?;
        Ok(Regorus { engine })
    }

    fn prepare(&self, call: &TrafficCall) -> Result<regorus::Value, EngineError> {
        let mut input = serde_json::Map::new();
        input.insert("tool".to_owned(), Value::String(call.tool.clone()));
        if let Some(resource) = call.arguments.get("resource") {
            input.insert("resource".to_owned(), resource.clone());
        }
        regorus::Value::from_json_str(&Value::Object(input).to_string())
            .map_err(|error| EngineError::new(Self::NAME, error))
    }

    fn decide(&mut self, input: &regorus::Value) -> Result<Decision, EngineError> {
        self.engine.set_input(input.clone());
        let value = self
            .engine
            .eval_rule("data.airlock.decision".to_owned())
            .map_err(|error| EngineError::new(Self::NAME, error))?;
        match value.as_string().map(|text| text.as_ref()) {
            Ok("allow") => Ok(Decision::Allow),
            Ok("ask") => Ok(Decision::Ask),
            Ok("deny") => Ok(Decision::Deny),
            _ => Err(EngineError::new(
                Self::NAME,
                format!("unexpected decision {value}"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::corpus::oracle_traffic;

    fn agrees<E: Engine>(rules: usize) {
        let mut engine = E::compile(rules).unwrap();
        for call in oracle_traffic(rules, 200) {
            let input = engine.prepare(&call).unwrap();
            assert_eq!(
                engine.decide(&input).unwrap(),
                call.expected,
                "{} on {} {}",
                E::NAME,
                call.tool,
                call.arguments
            );
        }
    }

    #[test]
    fn the_largest_corpus_compiles_for_regorus() {
        // regorus refuses modules of more than 20,000 lines.
        assert!(rego_text(10_000).lines().count() < 20_000);
        let mut engine = Regorus::compile(10_000).unwrap();
        let call = crate::corpus::call_for_rule(9_999);
        let input = engine.prepare(&call).unwrap();
        assert_eq!(engine.decide(&input).unwrap(), call.expected);
    }

    #[test]
    fn every_engine_gives_the_expected_decisions() {
        for rules in [1, 10, 30] {
            agrees::<Airlock>(rules);
            agrees::<Cedar>(rules);
            agrees::<Regorus>(rules);
        }
    }
}
