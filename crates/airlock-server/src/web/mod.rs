//! The web inbox (DESIGN.md §6.1 "Web pages", issue 7): server-rendered pages where a
//! person signs in with a user token and decides approvals from any browser or phone.
//!
//! - [`session`]: the session cookie (a random value whose SHA-256 the store keeps), the
//!   [`session::WebUser`] extractor, CSRF tokens.
//! - [`form`]: form and query extractors; every form POST passes the CSRF check there.
//! - [`error`]: [`error::WebError`], refusals as HTML pages (or a 303 to `/login`).
//! - [`layout`]: the page shell and the small pieces every page shares (risk badges,
//!   times, names).
//! - [`login`]: `GET|POST /login`, `POST /logout`.
//! - [`link`]: `GET|POST /l/{token}`, the signed single-use link of a notification
//!   (looking at it changes nothing; its page's button uses it).
//! - [`inbox`]: `GET /` (pending approvals, live over SSE), one card as a fragment, and
//!   the cookie-authenticated event stream `GET /web/events`.
//! - [`approval`]: `GET /approvals/{id}`: arguments, diff, the rule, session context.
//! - [`decide`]: `POST /approvals/{id}/decision`, through the same gate call as the API.
//! - [`turn`]: "approve all of this turn" on an approval's page, `POST /turns/decision`.
//! - [`diff`]: the line diff of edit-style tools.
//! - [`sessions`], [`audit`], [`rules`], [`policy`]: the other pages; [`policy_change`]:
//!   the policy's edit form, its 7-day replay preview and the save after it.
//! - [`assets`]: the one CSS file and the one JS file, compiled into the binary.
//!
//! INVARIANT: the pages hold no authority of their own. Every read and every decision
//! goes through the gate as the signed-in user's [`airlock_protocol::Principal`], exactly as
//! the API's handlers do, so roles (G6), binding digests (G2), "decide once" (G3) and the
//! audit (G8) apply unchanged. The web only adds the session cookie and CSRF.
//!
//! INVARIANT: no page has inline script or style: the Content-Security-Policy set by
//! [`security_headers`] allows scripts and styles from this origin only.

pub mod ambiguous;
pub mod approval;
pub mod assets;
pub mod audit;
pub mod decide;
pub mod diff;
pub mod error;
pub mod form;
pub mod inbox;
pub mod layout;
pub mod link;
pub mod login;
pub mod policy;
pub mod policy_change;
pub mod rules;
pub mod session;
pub mod sessions;
pub mod turn;

use crate::AppState;
use axum::http::header::{self, HeaderName, HeaderValue};
use axum::middleware;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;

/// The policy every page is served with: scripts, styles, fetches and the event stream
/// from this origin only, forms posted only here, never framed.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
    style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; \
    frame-ancestors 'none'; base-uri 'none'";

/// The pages and their assets, to be merged into the API's router.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(inbox::page))
        .route("/login", get(login::page).post(login::sign_in))
        .route("/logout", post(login::sign_out))
        .route("/l/{token}", get(link::open).post(link::use_link))
        .route("/approvals/{id}", get(approval::page))
        .route("/approvals/{id}/decision", post(decide::decide))
        .route("/turns/decision", post(turn::decide))
        .route("/calls/{id}/reconcile", post(ambiguous::reconcile))
        .route("/sessions/{id}", get(sessions::page))
        .route("/audit", get(audit::page))
        .route("/rules", get(rules::page))
        .route("/rules/{id}/revoke", post(rules::revoke))
        .route("/policy", get(policy::page))
        .route("/policy/preview", post(policy_change::preview))
        .route("/policy/save", post(policy_change::save))
        .route("/web/cards/{id}", get(inbox::card))
        .route("/web/events", get(inbox::events))
        .route(assets::CSS_PATH, get(assets::css))
        .route(assets::JS_PATH, get(assets::js))
        .layer(middleware::map_response(security_headers))
}

/// The address of an approval's page under `base_url` (`http://host:port`, no trailing
/// path): what a notification links to.
///
/// This is the seam for notifications (webhooks, email): they only need this URL. A
/// signed, single-use link that signs the person in is theirs to add; the page itself
/// asks for a sign-in when there is no session.
pub fn approval_page_url(base_url: &str, approval_id: &str) -> String {
    let id: String = approval_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        .collect();
    format!("{}/approvals/{id}", base_url.trim_end_matches('/'))
}

/// Adds the security headers to every page, fragment, redirect and asset.
async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
    // Pages show decisions as they stand: never from a cache (assets set their own).
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approval_page_urls_are_plain_paths_under_the_base() {
        assert_eq!(
            approval_page_url("http://127.0.0.1:7070/", "apr_0193abc"),
            "http://127.0.0.1:7070/approvals/apr_0193abc"
        );
        assert_eq!(
            approval_page_url("https://airlock.example", "apr_1/../x?y"),
            "https://airlock.example/approvals/apr_1xy"
        );
    }
}
