//! Who is asking: the [`Principal`] a bearer token (or a web session) resolves to.
//!
//! Not a wire type (no endpoint sends it whole), but every layer that checks a caller
//! needs it: the gate's role checks, the server's extractors, the runtime. It lives here,
//! below the store, so that knowing who is asking never needs the storage crate.

use crate::Role;

/// Who a token belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub workspace: String,
    pub subject: Subject,
}

/// A person or an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    User {
        id: String,
        name: String,
        role: Role,
    },
    Agent {
        id: String,
        name: String,
    },
}

impl Principal {
    /// The audit actor: `user:<id>` or `agent:<id>`.
    pub fn actor(&self) -> String {
        match &self.subject {
            Subject::User { id, .. } => format!("user:{id}"),
            Subject::Agent { id, .. } => format!("agent:{id}"),
        }
    }
}
