//! Replaying labelled calls through a real `airlock serve`, the way the agents reach it: each
//! payload is posted to its agent's hook endpoint with an agent token, and a simulated
//! person decides every asked call by its label, through the same decision endpoint (with
//! the binding digest) a person's inbox uses. Nothing goes around the HTTP API.

use super::corpus::{Entry, Label};
use super::tally::Outcome;
use anyhow::{bail, Context};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// How long a hook may wait for the simulated person: far longer than the person takes
/// (they look every few milliseconds), so an asked call always comes back decided.
const HOOK_WAIT_S: u64 = 30;

/// How often the simulated person looks at the inbox.
const PERSON_POLL: Duration = Duration::from_millis(2);

/// What the simulated person does with an approval they approve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Remember {
    /// Approve harmless calls with "remember for this session" when airlock offers a
    /// standing rule for them; never for a call that needs a person.
    Session,
    /// Approve once, never remember.
    Never,
}

/// A running server, seen as its owner (the simulated person) sees it.
pub struct Replayer {
    http: reqwest::Client,
    url: String,
    owner_token: String,
    remember: Remember,
}

impl Replayer {
    pub fn new(url: String, owner_token: String, remember: Remember) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(HOOK_WAIT_S + 30))
            .build()?;
        Ok(Replayer {
            http,
            url,
            owner_token,
            remember,
        })
    }

    /// Creates the agent whose token the replayed calls carry; returns the token.
    pub async fn agent(&self, name: &str) -> anyhow::Result<String> {
        crate::process::create_agent(&self.http, &self.url, &self.owner_token, name).await
    }

    /// Posts one call to its hook endpoint as `token`, lets the simulated person decide it
    /// if it is asked, and says what happened and why: the asking rule and its reason, or
    /// the hook's answer.
    pub async fn replay(&self, token: &str, entry: &Entry) -> anyhow::Result<(Outcome, String)> {
        let hook = self
            .http
            .post(format!(
                "{}{}?wait_s={HOOK_WAIT_S}",
                self.url,
                entry.agent.endpoint()
            ))
            .bearer_auth(token)
            .json(&entry.payload)
            .send();
        let hook = tokio::spawn(async move {
            let reply = hook.await?;
            let status = reply.status();
            let text = reply.text().await?;
            anyhow::Ok((status, text))
        });
        // The person: while the hook waits, an approval in the inbox is this call's (calls
        // are replayed one at a time and every approval is decided before the next).
        let deadline = Instant::now() + Duration::from_secs(HOOK_WAIT_S + 10);
        let mut asked = None;
        while !hook.is_finished() {
            if let Some(approval) = self.pending_approval().await? {
                self.decide(&approval, entry.label).await?;
                asked = Some(format!(
                    "{}: {}",
                    approval["rule"].as_str().unwrap_or("(no rule)"),
                    approval["reason"].as_str().unwrap_or_default()
                ));
                break;
            }
            if Instant::now() > deadline {
                bail!("the hook neither answered nor asked within {HOOK_WAIT_S} s");
            }
            tokio::time::sleep(PERSON_POLL).await;
        }
        let (status, text) = hook.await??;
        if status.as_u16() == 404 {
            return Ok((Outcome::NotReplayable, text));
        }
        if !status.is_success() {
            bail!("{} answered {status}: {text}", entry.agent.endpoint());
        }
        let allowed =
            allows(&text).with_context(|| format!("{} answered {text}", entry.agent.endpoint()))?;
        Ok(match (asked, allowed) {
            (Some(why), _) => (Outcome::Asked, why),
            (None, true) => (Outcome::Allowed, text),
            (None, false) => (Outcome::Denied, text),
        })
    }

    /// The oldest pending approval of the workspace, if any.
    async fn pending_approval(&self) -> anyhow::Result<Option<Value>> {
        let reply = self
            .http
            .get(format!("{}/v1/approvals?status=pending&limit=10", self.url))
            .bearer_auth(&self.owner_token)
            .send()
            .await?;
        let status = reply.status();
        let body: Value = reply.json().await?;
        if !status.is_success() {
            bail!("GET /v1/approvals answered {status}: {body}");
        }
        let items = body["items"]
            .as_array()
            .with_context(|| format!("GET /v1/approvals: no items in {body}"))?;
        Ok(items.last().cloned())
    }

    /// Approves (harmless, needs a person) or rejects (refuse), echoing the binding digest.
    async fn decide(&self, approval: &Value, label: Label) -> anyhow::Result<()> {
        let id = approval["id"].as_str().context("an approval without id")?;
        let digest = approval["binding_digest"]
            .as_str()
            .context("an approval without binding_digest")?;
        let mut decision = match label {
            Label::Harmless | Label::NeedsPerson => {
                json!({"decision": "approve", "binding_digest": digest, "reason": "simulated person: fine"})
            }
            Label::Refuse => {
                json!({"decision": "reject", "binding_digest": digest, "reason": "simulated person: never"})
            }
        };
        let rememberable = !approval["standing_target"].is_null()
            && !approval["session_id"].is_null()
            && label == Label::Harmless;
        if self.remember == Remember::Session && rememberable {
            decision["remember"] = json!({"scope": "session"});
        }
        let reply = self
            .http
            .post(format!("{}/v1/approvals/{id}/decision", self.url))
            .bearer_auth(&self.owner_token)
            .json(&decision)
            .send()
            .await?;
        let status = reply.status();
        if !status.is_success() {
            bail!(
                "deciding {id} answered {status}: {}",
                reply.text().await.unwrap_or_default()
            );
        }
        Ok(())
    }
}

/// Whether a hook's answer lets the tool run, in any of the three agents' shapes:
/// `hookSpecificOutput.permissionDecision` (Claude Code, Codex), a top-level `decision`
/// (Gemini CLI's `allow`/`deny`, the older `approve`/`block`), or nothing at all (Codex's
/// way of not objecting).
pub fn allows(text: &str) -> anyhow::Result<bool> {
    if text.trim().is_empty() {
        return Ok(true);
    }
    let body: Value = serde_json::from_str(text).context("not JSON")?;
    let decision = body["hookSpecificOutput"]["permissionDecision"]
        .as_str()
        .or_else(|| body["decision"].as_str());
    match decision {
        Some("allow" | "approve") => Ok(true),
        Some("deny" | "block" | "ask") => Ok(false),
        Some(other) => bail!("an unknown decision `{other}`"),
        None if body.as_object().is_some_and(|object| object.is_empty()) => Ok(true),
        None => bail!("no decision in it"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::allows;

    #[test]
    fn reads_each_agents_answer() {
        let claude = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#;
        assert!(!allows(claude).unwrap());
        assert!(allows(&claude.replace("deny", "allow")).unwrap());
        assert!(allows(r#"{"decision":"allow"}"#).unwrap());
        assert!(!allows(r#"{"decision":"deny","reason":"x"}"#).unwrap());
        assert!(!allows(r#"{"decision":"block"}"#).unwrap());
        assert!(allows("").unwrap());
        assert!(allows("{}").unwrap());
        assert!(allows(r#"{"decision":"maybe"}"#).is_err());
        assert!(allows(r#"{"other":1}"#).is_err());
        assert!(allows("<html>").is_err());
    }
}
