//! Signing in and out: `GET /login` (a form with a `token` field, and how to decide
//! without a browser), `POST /login` (token → session cookie, 303), `POST /logout`.
//!
//! Only user tokens sign in: agents never use the inbox, and an agent's token is refused
//! with a message that says so. Each sign-in and sign-out is audited
//! (`web_session.created`, `web_session.ended`), with the session's id and never its
//! cookie.

use crate::web::error::{see_other, WebError};
use crate::web::form::{filled, AnonymousForm, PageQuery, Posted};
use crate::web::layout;
use crate::web::session::{self, came_over_https, local_target, set_cookie};
use crate::AppState;
use airlock_gate::clock::add_seconds;
use airlock_gate::ids::{new_id, token_hash};
use airlock_gate::GateError;
use airlock_protocol::Subject;
use airlock_store::WebSession;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use maud::{html, Markup};
use serde::Deserialize;

/// `?next=/approvals/…&signed_out=1`.
#[derive(Debug, Default, Deserialize)]
pub struct LoginQuery {
    #[serde(default)]
    next: Option<String>,
    #[serde(default)]
    signed_out: Option<String>,
}

/// The sign-in form's fields.
#[derive(Debug, Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    token: String,
    #[serde(default)]
    next: Option<String>,
}

/// `GET /login`: the form, or straight on when the browser is signed in already.
pub async fn page(
    State(state): State<AppState>,
    headers: HeaderMap,
    PageQuery(query): PageQuery<LoginQuery>,
) -> Result<Response, WebError> {
    let next = local_target(query.next.as_deref());
    if session::find(&state, &headers).await?.is_some() {
        return Ok(see_other(&next));
    }
    let notice = query.signed_out.is_some().then_some("You are signed out.");
    Ok(login_page(StatusCode::OK, &next, notice, None))
}

/// `POST /login`: a user token in, a session cookie out.
pub async fn sign_in(
    State(state): State<AppState>,
    headers: HeaderMap,
    AnonymousForm(form): AnonymousForm<LoginForm>,
) -> Result<Response, WebError> {
    let next = local_target(form.next.as_deref());
    let Some(token) = filled(Some(form.token)) else {
        return Ok(login_page(
            StatusCode::BAD_REQUEST,
            &next,
            None,
            Some("Paste a token to sign in."),
        ));
    };
    let principal = match state.gate.authenticate(&token).await {
        Ok(principal) => principal,
        Err(GateError::Unauthorized) => {
            return Ok(login_page(
                StatusCode::UNAUTHORIZED,
                &next,
                None,
                Some("That token is unknown or has been revoked."),
            ))
        }
        Err(other) => return Err(other.into()),
    };
    if let Subject::Agent { name, .. } = &principal.subject {
        let message = format!(
            "This is the token of the agent “{name}”. Agents never use the inbox: sign \
             in with a person's (user) token."
        );
        return Ok(login_page(
            StatusCode::FORBIDDEN,
            &next,
            None,
            Some(&message),
        ));
    }
    let now = state.gate.now();
    let value = session::new_cookie_value();
    let web_session = WebSession {
        id: new_id("web"),
        cookie_hash: session::cookie_hash(&value),
        token_hash: token_hash(&token),
        created_at: now,
        expires_at: add_seconds(now, session::LIFETIME_SECONDS.unsigned_abs()),
    };
    state
        .gate
        .open_web_session(&principal, &web_session)
        .await?;
    let mut response = see_other(&next);
    response.headers_mut().insert(
        header::SET_COOKIE,
        set_cookie(Some(&value), came_over_https(&headers)),
    );
    Ok(response)
}

/// `POST /logout`: ends the session (CSRF-checked) and clears the cookie.
pub async fn sign_out(
    State(state): State<AppState>,
    headers: HeaderMap,
    posted: Posted<serde::de::IgnoredAny>,
) -> Result<Response, WebError> {
    let user = posted.user;
    state
        .gate
        .end_web_session(&user.principal, &user.session)
        .await
        .map_err(|error| WebError::Unavailable(error.to_string()))?;
    let mut response = see_other("/login?signed_out=1");
    response.headers_mut().insert(
        header::SET_COOKIE,
        set_cookie(None, came_over_https(&headers)),
    );
    Ok(response)
}

fn login_page(
    status: StatusCode,
    next: &str,
    notice: Option<&str>,
    error: Option<&str>,
) -> Response {
    let body = html! {
        section.panel.login {
            h1 { "Sign in" }
            p { "Paste your user token to decide what your agents ask for." }
            @if let Some(notice) = notice {
                p.notice.ok role="status" { (notice) }
            }
            @if let Some(error) = error {
                p.notice.error role="alert" { (error) }
            }
            form.stack method="post" action="/login" {
                input type="hidden" name="next" value=(next);
                label for="token" { "Token" }
                input #token type="password" name="token" autocomplete="off" spellcheck="false"
                    required autofocus placeholder="alk_…";
                button.primary type="submit" { "Sign in" }
            }
        }
        (help())
    };
    layout::respond(status, layout::page("Sign in", None, body))
}

/// Where tokens come from, and how to decide without a browser.
fn help() -> Markup {
    html! {
        section.help {
            h2 { "Where tokens come from" }
            p {
                "On its first start, " code { "airlock serve" } " writes the owner's token to "
                code { "<data-dir>/owner.token" } ". Owners and admins give each person a token of "
                "their own with " code { "POST /v1/users {\"name\", \"role\"}" }
                ". Viewers see the inbox; approvers and above decide."
            }
            h2 { "Deciding without a browser" }
            pre { "airlock approvals list\nairlock approvals show --latest\nairlock approvals approve --latest    # or: reject --latest --reason \"…\"" }
            p {
                "Over HTTP: " code { "GET /v1/approvals?status=pending" } " and "
                code { "POST /v1/approvals/{id}/decision" } ". The whole API is described at "
                a href="/openapi.json" { "/openapi.json" } "."
            }
        }
    }
}
