//! Who is asking, and what they may do (G6): bootstrap, tokens, users, agents, sessions.
//!
//! Roles are ordered `viewer < approver < admin < owner`. Agent tokens act as their agent:
//! they submit calls, open sessions and redeem their own grants, and nothing else.

use crate::effects::{audit, event};
use crate::ids::{new_id, new_token, token_hash};
use crate::{Gate, GateError};
use airlock_protocol::events::{
    AgentAudit, AgentUpdated, SessionUpdatedAudit, SubjectAudit, TokenRevoked, UserCreatedAudit,
};
use airlock_protocol::{Agent, Mode, Role, Session, User};
use airlock_protocol::{AuditEvent, WorkspaceEventData};
use airlock_store::{Effects, Principal, Subject, Workspace};

/// What `airlock serve` prints on the first start.
#[derive(Debug, Clone)]
pub struct Bootstrapped {
    pub workspace: Workspace,
    pub owner: User,
    pub owner_token: String,
}

pub use airlock_protocol::{AgentPatch, AgentSpec};

/// Requires a user with at least `role`.
pub fn require_role(principal: &Principal, role: Role, doing: &str) -> Result<(), GateError> {
    match &principal.subject {
        Subject::User { role: have, .. } if *have >= role => Ok(()),
        Subject::User { role: have, .. } => Err(GateError::Forbidden(format!(
            "{doing} needs the {role} role or higher; this user is {have}"
        ))),
        Subject::Agent { .. } => Err(GateError::Forbidden(format!(
            "agent tokens cannot {doing}; use a user token"
        ))),
    }
}

/// Requires an agent token and returns its id and name.
pub fn require_agent<'p>(
    principal: &'p Principal,
    doing: &str,
) -> Result<(&'p str, &'p str), GateError> {
    match &principal.subject {
        Subject::Agent { id, name } => Ok((id, name)),
        Subject::User { .. } => Err(GateError::Forbidden(format!(
            "only agents {doing}; use the agent's token"
        ))),
    }
}

fn check_name(name: &str, what: &str) -> Result<(), GateError> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(())
    } else {
        Err(GateError::Invalid(format!(
            "{what} name `{name}` must be 1 to 64 characters of letters, digits, `-`, `_` or `.`"
        )))
    }
}

impl Gate {
    /// On an empty store: creates the workspace and its owner and returns the owner's
    /// token (to be shown once). On a store that has the workspace: `None`.
    pub async fn bootstrap(
        &self,
        workspace_name: &str,
        owner_name: &str,
    ) -> Result<Option<Bootstrapped>, GateError> {
        let store = self.store();
        if store.workspace_by_name(workspace_name).await?.is_some() {
            return Ok(None);
        }
        let now = self.now();
        let workspace = Workspace {
            id: new_id("ws"),
            name: workspace_name.to_owned(),
            created_at: now,
        };
        store.create_workspace(&workspace).await?;
        let owner = User {
            id: new_id("usr"),
            name: owner_name.to_owned(),
            role: Role::Owner,
            created_at: now,
        };
        let token = new_token();
        let effects = Effects::none().audit(audit(
            now,
            "system",
            &owner.id,
            AuditEvent::UserCreated(UserCreatedAudit {
                name: owner.name.clone(),
                role: owner.role,
                bootstrap: true,
            }),
        ));
        store
            .create_user(&workspace.id, &owner, &token_hash(&token), &effects)
            .await?;
        // A workspace always has a policy in force: without one every call is denied.
        self.replace_policy(&workspace.id, "system", crate::policy::STARTER_POLICY)
            .await?;
        Ok(Some(Bootstrapped {
            workspace,
            owner,
            owner_token: token,
        }))
    }

    /// Resolves a bearer token.
    pub async fn authenticate(&self, token: &str) -> Result<Principal, GateError> {
        if token.is_empty() || token.len() > 256 {
            return Err(GateError::Unauthorized);
        }
        self.principal_for_hash(&token_hash(token))
            .await?
            .ok_or(GateError::Unauthorized)
    }

    /// Creates a user (owner or admin; only an owner creates owners).
    pub async fn create_user(
        &self,
        principal: &Principal,
        name: &str,
        role: Role,
    ) -> Result<(User, String), GateError> {
        require_role(principal, Role::Admin, "create users")?;
        if role == Role::Owner {
            require_role(principal, Role::Owner, "create owners")?;
        }
        check_name(name, "user")?;
        let now = self.now();
        let user = User {
            id: new_id("usr"),
            name: name.to_owned(),
            role,
            created_at: now,
        };
        let token = new_token();
        let effects = Effects::none().audit(audit(
            now,
            &principal.actor(),
            &user.id,
            AuditEvent::UserCreated(UserCreatedAudit {
                name: user.name.clone(),
                role: user.role,
                bootstrap: false,
            }),
        ));
        self.store()
            .create_user(&principal.workspace, &user, &token_hash(&token), &effects)
            .await?;
        Ok((user, token))
    }

    pub async fn list_users(&self, principal: &Principal) -> Result<Vec<User>, GateError> {
        require_role(principal, Role::Viewer, "list users")?;
        Ok(self.store().list_users(&principal.workspace).await?)
    }

    /// Creates an agent and returns its token (shown once). Admins and owners only.
    pub async fn create_agent(
        &self,
        principal: &Principal,
        spec: AgentSpec,
    ) -> Result<(Agent, String), GateError> {
        require_role(principal, Role::Admin, "create agents")?;
        check_name(&spec.name, "agent")?;
        let now = self.now();
        let agent = Agent {
            id: new_id("agt"),
            name: spec.name,
            mode: spec.mode.unwrap_or_default(),
            system_prompt: spec.system_prompt,
            tools: spec.tools,
            workspace_dir: spec.workspace_dir,
            llm: spec.llm,
            mcp_servers: spec.mcp_servers,
            created_at: now,
        };
        self.check_agent(&agent)?;
        let token = new_token();
        let effects = Effects::none().audit(audit(
            now,
            &principal.actor(),
            &agent.id,
            AuditEvent::AgentCreated(AgentAudit {
                name: agent.name.clone(),
                mode: agent.mode,
            }),
        ));
        self.store()
            .create_agent(&principal.workspace, &agent, &token_hash(&token), &effects)
            .await
            .map_err(|error| match GateError::from(error) {
                GateError::Conflict(_) => {
                    GateError::Conflict(format!("an agent named `{}` exists", agent.name))
                }
                other => other,
            })?;
        Ok((agent, token))
    }

    pub async fn list_agents(&self, principal: &Principal) -> Result<Vec<Agent>, GateError> {
        require_role(principal, Role::Viewer, "list agents")?;
        let agents = self.store().list_agents(&principal.workspace).await?;
        Ok(agents
            .into_iter()
            .map(|agent| crate::agent_view::as_seen_by(principal, agent))
            .collect())
    }

    /// An agent; agent tokens may read their own.
    pub async fn get_agent(&self, principal: &Principal, id: &str) -> Result<Agent, GateError> {
        if !matches!(&principal.subject, Subject::Agent { id: own, .. } if own == id) {
            require_role(principal, Role::Viewer, "read agents")?;
        }
        let agent = self
            .store()
            .get_agent(&principal.workspace, id)
            .await?
            .ok_or(GateError::NotFound("agent"))?;
        Ok(crate::agent_view::as_seen_by(principal, agent))
    }

    pub async fn update_agent(
        &self,
        principal: &Principal,
        id: &str,
        patch: AgentPatch,
    ) -> Result<Agent, GateError> {
        require_role(principal, Role::Admin, "change agents")?;
        let mut agent = self
            .store()
            .get_agent(&principal.workspace, id)
            .await?
            .ok_or(GateError::NotFound("agent"))?;
        if let Some(mode) = patch.mode {
            agent.mode = mode;
        }
        if patch.system_prompt.is_some() {
            agent.system_prompt = patch.system_prompt;
        }
        if patch.tools.is_some() {
            agent.tools = patch.tools;
        }
        if patch.workspace_dir.is_some() {
            agent.workspace_dir = patch.workspace_dir;
        }
        if patch.llm.is_some() {
            agent.llm = patch.llm;
        }
        if patch.mcp_servers.is_some() {
            agent.mcp_servers = patch.mcp_servers;
        }
        self.check_agent(&agent)?;
        let now = self.now();
        // The event tells other nodes to drop their copy of the agent (`cache.rs`).
        let effects = Effects::none()
            .audit(audit(
                now,
                &principal.actor(),
                &agent.id,
                AuditEvent::AgentUpdated(AgentAudit {
                    name: agent.name.clone(),
                    mode: agent.mode,
                }),
            ))
            .event(event(
                now,
                WorkspaceEventData::AgentUpdated(AgentUpdated {
                    id: agent.id.clone(),
                    name: agent.name.clone(),
                    mode: agent.mode,
                }),
            ));
        self.store()
            .update_agent(&principal.workspace, &agent, &effects)
            .await?;
        self.inner.cache.forget_agents(&principal.workspace);
        self.poke(&principal.workspace);
        Ok(agent)
    }

    /// Revokes every token of an agent (admins) or a user (admins; an owner's only by an
    /// owner); returns how many. Takes effect on this node before it answers, on the
    /// others when they hear `token.revoked` (`cache.rs`).
    pub async fn revoke_tokens(
        &self,
        principal: &Principal,
        subject_id: &str,
    ) -> Result<u64, GateError> {
        require_role(principal, Role::Admin, "revoke tokens")?;
        let workspace = principal.workspace.as_str();
        let is_agent = self
            .store()
            .get_agent(workspace, subject_id)
            .await?
            .is_some();
        if !is_agent {
            let user = self
                .store()
                .list_users(workspace)
                .await?
                .into_iter()
                .find(|user| user.id == subject_id)
                .ok_or(GateError::NotFound("user or agent"))?;
            if user.role == Role::Owner {
                require_role(principal, Role::Owner, "revoke an owner's tokens")?;
            }
        }
        let now = self.now();
        let effects = Effects::none()
            .audit(audit(
                now,
                &principal.actor(),
                subject_id,
                AuditEvent::TokenRevoked(SubjectAudit {
                    subject_id: subject_id.to_owned(),
                }),
            ))
            .event(event(
                now,
                WorkspaceEventData::TokenRevoked(TokenRevoked {
                    subject_id: subject_id.to_owned(),
                }),
            ));
        let revoked = self
            .store()
            .revoke_tokens(workspace, subject_id, now, &effects)
            .await?;
        self.inner.cache.forget_tokens(workspace);
        if revoked > 0 {
            self.poke(workspace);
        }
        Ok(revoked)
    }

    /// Opens a session. An agent token opens one for itself; a user names the agent.
    pub async fn create_session(
        &self,
        principal: &Principal,
        agent_id: Option<String>,
        title: Option<String>,
    ) -> Result<Session, GateError> {
        let agent_id = match &principal.subject {
            Subject::Agent { id, .. } => {
                if agent_id.as_ref().is_some_and(|given| given != id) {
                    return Err(GateError::Forbidden(
                        "an agent token opens sessions for its own agent only".into(),
                    ));
                }
                Some(id.clone())
            }
            Subject::User { .. } => {
                require_role(principal, Role::Approver, "open sessions")?;
                if let Some(agent_id) = &agent_id {
                    self.store()
                        .get_agent(&principal.workspace, agent_id)
                        .await?
                        .ok_or(GateError::NotFound("agent"))?;
                }
                agent_id
            }
        };
        if title.as_ref().is_some_and(|t| t.chars().count() > 200) {
            return Err(GateError::Invalid(
                "title is longer than 200 characters".into(),
            ));
        }
        let session = Session {
            id: new_id("ses"),
            agent_id,
            title,
            task_id: None,
            external_id: None,
            created_at: self.now(),
            created_by: Some(principal.actor()),
            mode: None,
        };
        self.store()
            .create_session(&principal.workspace, &session)
            .await?;
        Ok(session)
    }

    /// The agent's session that another system names `external_id` (a coding agent's
    /// session id), opened on first use: hooks group their calls by it, so that session
    /// standing rules and the inbox follow the agent's own sessions. Agent tokens only.
    /// Returns whether it was opened now.
    pub async fn session_for_external(
        &self,
        principal: &Principal,
        external_id: &str,
        title: Option<String>,
    ) -> Result<(Session, bool), GateError> {
        let (agent_id, _) = require_agent(principal, "map external sessions")?;
        if external_id.is_empty() || external_id.chars().count() > 200 {
            return Err(GateError::Invalid(
                "external_id must be 1 to 200 characters".into(),
            ));
        }
        let workspace = principal.workspace.as_str();
        if let Some(session) = self
            .store()
            .session_by_external(workspace, agent_id, external_id)
            .await?
        {
            return Ok((session, false));
        }
        let session = Session {
            id: new_id("ses"),
            agent_id: Some(agent_id.to_owned()),
            title: title.map(|title| title.chars().take(200).collect()),
            task_id: None,
            external_id: Some(external_id.to_owned()),
            created_at: self.now(),
            created_by: Some(principal.actor()),
            mode: None,
        };
        match self.store().create_session(workspace, &session).await {
            Ok(()) => Ok((session, true)),
            // Opened by a concurrent hook a moment ago: that one is the session.
            Err(airlock_store::StoreError::Conflict(_)) => self
                .store()
                .session_by_external(workspace, agent_id, external_id)
                .await?
                .map(|session| (session, false))
                .ok_or(GateError::Conflict(
                    "the session could not be opened".into(),
                )),
            Err(error) => Err(error.into()),
        }
    }

    /// A session, for its agent or for users.
    /// Overrides the mode of one session's calls (DESIGN.md §4.4), or clears the override
    /// (`None`). Owners and admins, as for an agent's own mode.
    pub async fn set_session_mode(
        &self,
        principal: &Principal,
        id: &str,
        mode: Option<Mode>,
    ) -> Result<Session, GateError> {
        require_role(principal, Role::Admin, "change a session's mode")?;
        let workspace = principal.workspace.as_str();
        let mut session = self
            .store()
            .get_session(workspace, id)
            .await?
            .ok_or(GateError::NotFound("session"))?;
        session.mode = mode;
        let now = self.now();
        let data = AuditEvent::SessionUpdated(SessionUpdatedAudit {
            agent_id: session.agent_id.clone(),
            mode,
        });
        let effects = Effects::none()
            .audit(audit(now, &principal.actor(), id, data))
            .event(event(
                now,
                WorkspaceEventData::SessionUpdated(session.clone()),
            ));
        if !self
            .store()
            .set_session_mode(workspace, id, mode, &effects)
            .await?
        {
            return Err(GateError::NotFound("session"));
        }
        self.poke(workspace);
        Ok(session)
    }

    pub async fn get_session(&self, principal: &Principal, id: &str) -> Result<Session, GateError> {
        let session = self
            .store()
            .get_session(&principal.workspace, id)
            .await?
            .ok_or(GateError::NotFound("session"))?;
        match &principal.subject {
            Subject::Agent { id: agent, .. } if session.agent_id.as_deref() != Some(agent) => {
                Err(GateError::NotFound("session"))
            }
            _ => Ok(session),
        }
    }
}
