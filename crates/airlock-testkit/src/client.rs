//! A thin JSON client over reqwest: every request returns a [`Reply`] with the status, the
//! headers, the raw text and the body parsed as JSON (`Null` when it is not JSON), so
//! tests assert on what a client would see.

use crate::{Result, TestkitError};
use reqwest::header::{HeaderMap, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{Method, StatusCode};
use serde_json::Value;

/// A client bound to one server.
#[derive(Debug, Clone)]
pub struct Client {
    base: String,
    http: reqwest::Client,
}

/// One answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub text: String,
    /// The body parsed as JSON; `Null` when it is not JSON.
    pub body: Value,
}

impl Reply {
    /// The body when the status is `expected`, else an error with the whole answer.
    pub fn expect_status(self, expected: u16) -> Result<Value> {
        if self.status.as_u16() == expected {
            Ok(self.body)
        } else {
            Err(TestkitError::Unexpected(format!(
                "expected {expected}, got {}: {}",
                self.status, self.text
            )))
        }
    }

    /// The problem `type` of an error answer (empty when there is none).
    pub fn problem_type(&self) -> &str {
        self.body["type"].as_str().unwrap_or_default()
    }

    /// The `Content-Type` header (empty when absent).
    pub fn content_type(&self) -> &str {
        self.headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }
}

impl Client {
    pub fn new(base: &str) -> Client {
        Client {
            base: base.trim_end_matches('/').to_owned(),
            http: reqwest::Client::new(),
        }
    }

    /// The full URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The underlying reqwest client, for streaming and odd requests.
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    pub async fn get(&self, path: &str, token: &str) -> Result<Reply> {
        self.send(self.request(Method::GET, path, Some(token)))
            .await
    }

    pub async fn delete(&self, path: &str, token: &str) -> Result<Reply> {
        self.send(self.request(Method::DELETE, path, Some(token)))
            .await
    }

    pub async fn post(&self, path: &str, token: &str, body: &Value) -> Result<Reply> {
        self.send(self.request(Method::POST, path, Some(token)).json(body))
            .await
    }

    pub async fn patch(&self, path: &str, token: &str, body: &Value) -> Result<Reply> {
        self.send(self.request(Method::PATCH, path, Some(token)).json(body))
            .await
    }

    /// A POST without a body.
    pub async fn post_empty(&self, path: &str, token: &str) -> Result<Reply> {
        self.send(self.request(Method::POST, path, Some(token)))
            .await
    }

    /// A PUT of text (the policy upload).
    pub async fn put_text(&self, path: &str, token: &str, text: &str) -> Result<Reply> {
        let request = self
            .request(Method::PUT, path, Some(token))
            .header(CONTENT_TYPE, "application/toml")
            .body(text.to_owned());
        self.send(request).await
    }

    /// Any request: method, optional token, optional content type and raw body bytes.
    pub async fn raw(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> Result<Reply> {
        let mut request = self.request(method, path, token).body(body);
        if let Some(content_type) = content_type {
            request = request.header(CONTENT_TYPE, content_type);
        }
        self.send(request).await
    }

    /// A request builder with the bearer token set, for what the helpers above lack.
    pub fn request(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
    ) -> reqwest::RequestBuilder {
        let request = self.http.request(method, self.url(path));
        match token {
            Some(token) => request.header(AUTHORIZATION, format!("Bearer {token}")),
            None => request,
        }
    }

    /// Sends and reads the whole answer.
    pub async fn send(&self, request: reqwest::RequestBuilder) -> Result<Reply> {
        let response = request.send().await?;
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await?;
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(Reply {
            status,
            headers,
            text,
            body,
        })
    }
}
