//! Every API endpoint refuses a query parameter it does not know, 422 naming it (DESIGN.md
//! §11.5): a client that sends `?dry_run=true` to a server that does not know it must not
//! have its policy saved for real.
//!
//! The parameters an operation knows are read from the OpenAPI document (`openapi.rs`),
//! the one list that already describes every route, so a new route or parameter needs no
//! second table here. Operations whose query struct is parsed with `deny_unknown_fields`
//! refuse the same way by themselves; this layer covers the ones with no query struct.
//! The hook endpoints are left to their handlers: an http hook answers every failure
//! with a 200 deny (see `handlers/hooks.rs`), never with a 422.

use crate::error::ApiError;
use crate::openapi::ApiDoc;
use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;
use utoipa::openapi::path::ParameterIn;
use utoipa::OpenApi;

/// (method, route) → the query parameters the operation declares.
type Known = HashMap<(String, String), HashSet<String>>;

fn known() -> &'static Known {
    static KNOWN: OnceLock<Known> = OnceLock::new();
    KNOWN.get_or_init(|| {
        let mut known = Known::new();
        for (path, item) in ApiDoc::openapi().paths.paths {
            let operations = [
                ("GET", &item.get),
                ("PUT", &item.put),
                ("POST", &item.post),
                ("DELETE", &item.delete),
                ("PATCH", &item.patch),
            ];
            for (method, operation) in operations {
                let Some(operation) = operation else {
                    continue;
                };
                let names = operation
                    .parameters
                    .iter()
                    .flatten()
                    .filter(|p| matches!(p.parameter_in, ParameterIn::Query))
                    .map(|p| p.name.clone())
                    .collect();
                known.insert((method.to_owned(), path.clone()), names);
            }
        }
        known
    })
}

/// The first parameter of `query` that is not in `allowed`.
fn unknown_parameter(query: &str, allowed: &HashSet<String>) -> Option<String> {
    serde_urlencoded::from_str::<Vec<(String, String)>>(query)
        .unwrap_or_default()
        .into_iter()
        .map(|(name, _)| name)
        .find(|name| !allowed.contains(name))
}

/// The layer: 422 for a query parameter the matched operation does not declare.
pub async fn refuse_unknown(request: Request, next: Next) -> Response {
    let query = request.uri().query().unwrap_or_default();
    if !query.is_empty() {
        let route = request
            .extensions()
            .get::<MatchedPath>()
            .map(|path| path.as_str().to_owned());
        if let Some(route) = route.filter(|route| !route.starts_with("/v1/hooks/")) {
            let key = (request.method().as_str().to_owned(), route);
            if let Some(allowed) = known().get(&key) {
                if let Some(name) = unknown_parameter(query, allowed) {
                    return ApiError::Invalid(format!(
                        "unknown query parameter `{name}`: {} {} takes {}",
                        key.0,
                        key.1,
                        describe(allowed)
                    ))
                    .into_response();
                }
            }
        }
    }
    next.run(request).await
}

fn describe(allowed: &HashSet<String>) -> String {
    if allowed.is_empty() {
        return "no query parameters".into();
    }
    let mut names: Vec<&str> = allowed.iter().map(String::as_str).collect();
    names.sort_unstable();
    format!("only `{}`", names.join("`, `"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn reads_the_declared_parameters_of_each_operation() {
        let known = known();
        let put = &known[&("PUT".to_owned(), "/v1/policy".to_owned())];
        assert!(put.contains("dry_run") && put.contains("since"), "{put:?}");
        let get = &known[&("GET".to_owned(), "/v1/policy".to_owned())];
        assert!(get.is_empty());
        assert_eq!(
            unknown_parameter("dry_run=true&x=1", put).as_deref(),
            Some("x")
        );
        assert_eq!(unknown_parameter("dry_run=true", put), None);
    }
}
