//! What the process that owns the database does at start-up, before any token exists
//! (`airlock serve`: bootstrap, the policy in force, the demo's agents). These reads
//! take no principal: whoever can start the server over this database can read it
//! directly anyway. Everything done *after* them goes through the principal-checked API
//! as the workspace's owner ([`Gate::owner`]).

use crate::{Gate, GateError};
use airlock_protocol::Role;
use airlock_store::{Principal, Subject};

impl Gate {
    /// The id of the workspace named `name`, if there is one.
    pub async fn workspace_id(&self, name: &str) -> Result<Option<String>, GateError> {
        Ok(self
            .store()
            .workspace_by_name(name)
            .await?
            .map(|workspace| workspace.id))
    }

    /// Whether the workspace has a policy in force.
    pub async fn has_policy(&self, workspace: &str) -> Result<bool, GateError> {
        Ok(self.store().current_policy(workspace).await?.is_some())
    }

    /// The text of the policy in force, if there is one.
    pub async fn policy_source(&self, workspace: &str) -> Result<Option<String>, GateError> {
        Ok(self
            .store()
            .current_policy(workspace)
            .await?
            .map(|info| info.source))
    }

    /// The workspace's owner as a principal, for start-up work done in the owner's name
    /// (the demo creates its agents so). `None` when the workspace has no owner.
    pub async fn owner(&self, workspace: &str) -> Result<Option<Principal>, GateError> {
        let owner = self
            .store()
            .list_users(workspace)
            .await?
            .into_iter()
            .find(|user| user.role == Role::Owner);
        Ok(owner.map(|owner| Principal {
            workspace: workspace.to_owned(),
            subject: Subject::User {
                id: owner.id,
                name: owner.name,
                role: owner.role,
            },
        }))
    }
}
