//! Web sessions: the inbox's sign-in cookie, opened from a user token or from a signed
//! link, and ended on sign-out. Each opening and ending is audited here, so that the
//! server cannot write a session without its record (`web_session.created`,
//! `web_session.ended`, with the session's id and never its cookie).

use crate::effects::audit;
use crate::{Gate, GateError};
use airlock_protocol::events::{WebSessionCreatedAudit, WebSessionEndedAudit};
use airlock_protocol::AuditEvent;
use airlock_store::{Effects, LinkError, LinkUse, Principal, StoreResult, Subject, WebSession};

impl Gate {
    /// The live web session whose cookie hashes to `cookie_hash`, with the principal it
    /// acts as.
    pub async fn web_session(
        &self,
        cookie_hash: &str,
    ) -> StoreResult<Option<(WebSession, Principal)>> {
        self.store().web_session(cookie_hash, self.now()).await
    }

    /// Opens `session` for a user who signed in with their token. Agents never use the
    /// inbox: an agent principal is refused and nothing is written.
    pub async fn open_web_session(
        &self,
        principal: &Principal,
        session: &WebSession,
    ) -> Result<(), GateError> {
        let Subject::User { id: user_id, .. } = &principal.subject else {
            return Err(GateError::Forbidden(
                "agent tokens cannot sign in to the inbox; use a user token".into(),
            ));
        };
        let effects = Effects::none().audit(audit(
            session.created_at,
            &principal.actor(),
            &session.id,
            AuditEvent::WebSessionCreated(WebSessionCreatedAudit {
                user_id: user_id.to_owned(),
                expires_at: session.expires_at.to_string(),
                via: None,
                approval_id: None,
                link: None,
            }),
        ));
        self.store()
            .create_web_session(&principal.workspace, session, &effects)
            .await?;
        Ok(())
    }

    /// Ends the signed-in user's `session` (sign-out). `false` (nothing written) when it
    /// had ended already.
    pub async fn end_web_session(
        &self,
        principal: &Principal,
        session: &WebSession,
    ) -> StoreResult<bool> {
        let effects = Effects::none().audit(audit(
            self.now(),
            &principal.actor(),
            &session.id,
            AuditEvent::WebSessionEnded(WebSessionEndedAudit {
                reason: "signed out".into(),
            }),
        ));
        self.store()
            .delete_web_session(&principal.workspace, &session.cookie_hash, &effects)
            .await
    }

    /// Uses a verified signed link: consumes its nonce and opens `session` as the link's
    /// user, in one transaction (see `NotifyStore::use_link`). The caller has checked the
    /// signature and the expiry.
    pub async fn open_link_session(
        &self,
        workspace: &str,
        link: &LinkUse,
        session: &WebSession,
    ) -> Result<WebSession, LinkError> {
        let effects = Effects::none().audit(audit(
            link.used_at,
            &format!("user:{}", link.user_id),
            &session.id,
            AuditEvent::WebSessionCreated(WebSessionCreatedAudit {
                user_id: link.user_id.clone(),
                expires_at: session.expires_at.to_string(),
                via: Some("link".into()),
                approval_id: Some(link.approval_id.clone()),
                link: Some(link.nonce.clone()),
            }),
        ));
        self.store()
            .use_link(workspace, link, session, &effects)
            .await
    }
}
