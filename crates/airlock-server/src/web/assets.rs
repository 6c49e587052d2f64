//! The pages' one stylesheet and one script, compiled into the binary: nothing to build,
//! nothing to install. Their URLs carry the crate version, so a new release is fetched
//! at once while a browser may cache the files for a day.

use axum::http::header;
use axum::response::IntoResponse;

pub const CSS_PATH: &str = "/web/airlock.css";
pub const JS_PATH: &str = "/web/airlock.js";

const CSS: &str = include_str!("assets/airlock.css");
const JS: &str = include_str!("assets/airlock.js");

pub fn css_url() -> String {
    format!("{CSS_PATH}?v={}", env!("CARGO_PKG_VERSION"))
}

pub fn js_url() -> String {
    format!("{JS_PATH}?v={}", env!("CARGO_PKG_VERSION"))
}

pub async fn css() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=86400"),
        ],
        CSS,
    )
}

pub async fn js() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=86400"),
        ],
        JS,
    )
}
