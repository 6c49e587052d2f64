//! `GET /l/{token}`: the signed, single-use, expiring link a notification carries
//! (`crate::notify::sign` makes and checks the token).
//!
//! In order: the signature must verify under the server's link key (else 404 "not a
//! valid link"), the link must not have expired (410), and its nonce is consumed in the
//! same store transaction that opens a web session as the link's user (a second use is
//! 410 "already used"; nothing is written). Then the browser gets the usual session
//! cookie and a 303 to `/approvals/{id}`, where the approval page applies the user's
//! role as for any sign-in. The sign-in is audited as `web_session.created` with
//! `"via": "link"`.

use crate::notify::{link_key, sign};
use crate::web::error::see_other;
use crate::web::layout;
use crate::web::session::{self, came_over_https, set_cookie};
use crate::AppState;
use airlock_gate::clock::add_seconds;
use airlock_gate::ids::new_id;
use airlock_store::{LinkError, LinkUse, WebSession};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use maud::html;

/// `GET /l/{token}`.
pub async fn open(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> Response {
    let now = state.gate.now();
    let key = match link_key(&state.gate).await {
        Ok(key) => key,
        Err(error) => return unavailable(&error.to_string()),
    };
    let claims = match sign::verify_link(key.as_bytes(), &token, now) {
        Ok(claims) => claims,
        Err(sign::LinkProblem::Invalid) => {
            return refused(
                StatusCode::NOT_FOUND,
                "This link is not valid",
                "It was not made by this airlock server, or it was changed on the way.",
                None,
            )
        }
        Err(sign::LinkProblem::Expired) => {
            return refused(
                StatusCode::GONE,
                "This link has expired",
                "Links from notifications work for a limited time.",
                None,
            )
        }
    };
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
        Err(LinkError::Store(error)) => unavailable(&error.to_string()),
    }
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
