//! `GET|POST /l/{token}`: the signed, single-use, expiring link a notification carries
//! (`crate::notify::sign` makes and checks the token).
//!
//! `GET` only looks: a link whose signature does not verify under the server's link key
//! is 404 "not a valid link", an expired one 410; a good one shows a page with one
//! button, "Sign in and open the approval", which posts the link back. Opening the link
//! changes nothing, so a mail scanner or a chat's link preview that fetches it neither
//! spends it nor gets a session (they never press buttons).
//!
//! A link exists to decide one approval: once that approval is no longer pending, or
//! when it names none (a link forged with a leaked key), `GET` and `POST` answer 410
//! "no longer waiting" (404 for none) and sign nobody in; the page offers the ordinary
//! sign-in. `POST` checks it again inside the transaction that would open the session.
//!
//! `POST` (from that page, not from another site) checks the link again and consumes its
//! nonce in the same store transaction that opens a web session as the link's user (a
//! second use is 410 "already used"; nothing is written). Then the browser gets the usual
//! session cookie and a 303 to `/approvals/{id}`, where the approval page applies the
//! user's role as for any sign-in. The post comes from this site, so the browser sends the
//! new `SameSite=Strict` cookie along the redirect. The sign-in is audited as
//! `web_session.created` with `"via": "link"`.

use crate::notify::{link_key, sign};
use crate::web::error::see_other;
use crate::web::form::AnonymousForm;
use crate::web::layout;
use crate::web::session::{self, came_over_https, set_cookie};
use crate::AppState;
use airlock_gate::clock::add_seconds;
use airlock_gate::ids::new_id;
use airlock_protocol::ApprovalStatus;
use airlock_store::{LinkError, LinkUse, WebSession};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use maud::html;

/// `GET /l/{token}`: the page that offers to use the link.
pub async fn open(State(state): State<AppState>, Path(token): Path<String>) -> Response {
    let claims = match verified(&state, &token).await {
        Ok(claims) => claims,
        Err(refusal) => return refusal,
    };
    let approval = state
        .gate
        .notifications()
        .approval(&claims.workspace, &claims.approval_id)
        .await;
    match approval {
        Ok(Some(approval)) if approval.status == ApprovalStatus::Pending => {}
        Ok(Some(approval)) => return not_pending(approval.status.as_str(), &claims),
        Ok(None) => return no_approval(),
        Err(error) => return unavailable(&error.to_string()),
    }
    let body = html! {
        section.panel.link {
            h1 { "Open the approval" }
            p {
                "This link from a notification signs you in to airlock, once, and opens the "
                "approval it is about."
            }
            form.stack method="post" action=(format!("/l/{token}")) {
                button.primary #use-link type="submit" { "Sign in and open the approval" }
            }
            p.hint {
                "Not you, or already signed in? "
                a href=(format!("/approvals/{}", claims.approval_id)) { "Open the approval" }
                " without using the link."
            }
        }
    };
    layout::ok(layout::page("Open the approval", None, body))
}

/// `POST /l/{token}`: uses the link — a session for its user, then the approval.
pub async fn use_link(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(token): Path<String>,
    AnonymousForm(_): AnonymousForm<serde::de::IgnoredAny>,
) -> Response {
    let claims = match verified(&state, &token).await {
        Ok(claims) => claims,
        Err(refusal) => return refusal,
    };
    let now = state.gate.now();
    let next = format!("/approvals/{}", claims.approval_id);
    let value = session::new_cookie_value();
    let web_session = WebSession {
        id: new_id("web"),
        cookie_hash: session::cookie_hash(&value),
        token_hash: String::new(),
        created_at: now,
        expires_at: add_seconds(now, session::LIFETIME_SECONDS.unsigned_abs()),
    };
    let link = LinkUse {
        nonce: claims.nonce.clone(),
        approval_id: claims.approval_id.clone(),
        user_id: claims.user_id.clone(),
        used_at: now,
        expires_at: claims.expires_at,
    };
    let used = state
        .gate
        .open_link_session(&claims.workspace, &link, &web_session)
        .await;
    match used {
        Ok(_) => {
            let mut response = see_other(&next);
            response.headers_mut().insert(
                header::SET_COOKIE,
                set_cookie(Some(&value), came_over_https(&headers)),
            );
            response
        }
        Err(LinkError::AlreadyUsed) => refused(
            StatusCode::GONE,
            "This link was already used",
            "Each link signs in once. Sign in with your token to open the approval.",
            Some(&next),
        ),
        Err(LinkError::UnknownUser) => refused(
            StatusCode::FORBIDDEN,
            "This link cannot sign you in",
            "The person it was made for has no live token in this workspace any more.",
            Some(&next),
        ),
        Err(LinkError::NotPending(status)) => not_pending(&status, &claims),
        Err(LinkError::NoApproval) => no_approval(),
        Err(LinkError::Store(error)) => unavailable(&error.to_string()),
    }
}

/// The link's approval ended: the link signs nobody in any more.
fn not_pending(status: &str, claims: &sign::LinkClaims) -> Response {
    refused(
        StatusCode::GONE,
        "This approval is no longer waiting",
        &format!(
            "It is already {status}, so this link signs nobody in. Sign in to see how it ended."
        ),
        Some(&format!("/approvals/{}", claims.approval_id)),
    )
}

fn no_approval() -> Response {
    refused(
        StatusCode::NOT_FOUND,
        "This link is not valid",
        "The approval it is about does not exist.",
        None,
    )
}

/// The link's claims when its signature verifies and it has not expired; else the page
/// that says why.
async fn verified(state: &AppState, token: &str) -> Result<sign::LinkClaims, Response> {
    let key = link_key(&state.gate)
        .await
        .map_err(|error| unavailable(&error.to_string()))?;
    sign::verify_link(key.as_bytes(), token, state.gate.now()).map_err(|problem| match problem {
        sign::LinkProblem::Invalid => refused(
            StatusCode::NOT_FOUND,
            "This link is not valid",
            "It was not made by this airlock server, or it was changed on the way.",
            None,
        ),
        sign::LinkProblem::Expired => refused(
            StatusCode::GONE,
            "This link has expired",
            "Links from notifications work for a limited time.",
            None,
        ),
    })
}

fn refused(status: StatusCode, title: &str, detail: &str, next: Option<&str>) -> Response {
    let body = html! {
        section.panel {
            h1 { (title) }
            p.notice.error role="alert" { (detail) }
            @if let Some(next) = next {
                p { a href={ "/login?next=" (next) } { "Sign in with a token" } }
            } @else {
                p { a href="/login" { "Sign in with a token" } }
            }
        }
    };
    layout::respond(status, layout::page(title, None, body))
}

fn unavailable(error: &str) -> Response {
    tracing::warn!(%error, "a signed link could not be checked");
    refused(
        StatusCode::SERVICE_UNAVAILABLE,
        "Try again in a moment",
        "The server cannot reach its database right now.",
        None,
    )
}
