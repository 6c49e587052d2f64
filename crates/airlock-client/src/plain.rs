//! A blocking HTTP/1.1 client for `http://` gateways, as small as the hook needs: one
//! request per connection (`Connection: close`), written in one piece, and the answer read
//! to its end (a `Content-Length` body, a chunked one, or up to the close). It sets up no
//! TLS and links no TLS library: `https://` gateways go through the whole CLI's client.
//!
//! Failures are classified as every client's are ([`crate::errors`]): nothing could be
//! sent ([`NotSent`]), the answer was lost ([`Transient`]), or the server answered with
//! an error status ([`crate::errors::from_status`]).

use crate::errors::{from_status, NotSent, Transient};
use anyhow::anyhow;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// How long opening a connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the answer may take: long polls hold a request for up to 60 s.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(90);
/// The largest answer read (a hook's answer is a few hundred bytes).
const MAX_ANSWER: u64 = 16 * 1024 * 1024;

/// Whether `url` is a plain `http://` one, which [`Plain`] serves.
pub fn serves(url: &str) -> bool {
    url.get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"))
}

/// A successful (2xx) answer.
#[derive(Debug)]
pub struct Answer {
    /// Header names in lower case, values as sent.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    /// Whether the answer carries the header `name` (lower case).
    pub fn has_header(&self, name: &str) -> bool {
        self.headers.iter().any(|(header, _)| header == name)
    }
}

/// A client of one `http://` server.
pub struct Plain {
    /// The URL as given, without a trailing `/` (for messages).
    base: String,
    /// `host[:port]` (the `Host` header) and the path prefix, or why the URL is unusable.
    target: Result<(String, String), String>,
    token: Option<String>,
}

impl Plain {
    /// A client of `base` (`http://host[:port][/prefix]`) sending `token`, if any.
    pub fn new(base: &str, token: Option<String>) -> Plain {
        let base = base.trim_end_matches('/').to_owned();
        let target = split(&base);
        Plain {
            base,
            target,
            token,
        }
    }

    /// `POST path` with a body that is already JSON text, and extra headers.
    pub fn post(
        &self,
        path: &str,
        body: &str,
        headers: &[(&str, String)],
    ) -> anyhow::Result<Answer> {
        let (authority, prefix) = self.target.as_ref().map_err(|problem| {
            anyhow!(
                "cannot use the airlock URL {}: {problem}",
                crate::url::without_userinfo(&self.base)
            )
        })?;
        let request = self.request(authority, &format!("{prefix}{path}"), body, headers)?;
        let mut stream = self.connect(authority)?;
        let exchanged = stream
            .write_all(&request)
            .and_then(|()| stream.flush())
            .and_then(|()| read_answer(&mut stream));
        let raw = exchanged.map_err(|error| self.lost(error))?;
        let (status, headers, body) = parse_answer(&raw).map_err(|problem| self.lost(problem))?;
        if !(200..300).contains(&status) {
            let text = String::from_utf8_lossy(&body);
            return Err(from_status(status, &text, self.token.is_some()));
        }
        Ok(Answer { headers, body })
    }

    /// The whole request, head and body, so that it leaves in one write.
    fn request(
        &self,
        authority: &str,
        target: &str,
        body: &str,
        headers: &[(&str, String)],
    ) -> anyhow::Result<Vec<u8>> {
        let mut head = format!(
            "POST {target} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: airlock/{}\r\n\
             Accept: application/json\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n",
            env!("CARGO_PKG_VERSION"),
            body.len()
        );
        let token = self.token.as_ref().map(|token| format!("Bearer {token}"));
        let all = token
            .iter()
            .map(|value| ("Authorization", value.as_str()))
            .chain(headers.iter().map(|(name, value)| (*name, value.as_str())));
        for (name, value) in all {
            // What an HTTP header can carry: no control characters (a line break would
            // end the header). Refused before anything is sent.
            if !value
                .bytes()
                .all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f))
            {
                return Err(NotSent(format!(
                    "the {name} header's value cannot be sent in an HTTP header"
                ))
                .into());
            }
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let mut request = head.into_bytes();
        request.extend_from_slice(body.as_bytes());
        Ok(request)
    }

    /// A connection to the server, tried on each of its addresses; failing is [`NotSent`].
    fn connect(&self, authority: &str) -> anyhow::Result<TcpStream> {
        let not_sent = |error: &dyn std::fmt::Display| -> anyhow::Error {
            NotSent(format!(
                "cannot reach airlock at {}: {error}",
                crate::url::without_userinfo(&self.base)
            ))
            .into()
        };
        let addresses = authority
            .to_socket_addrs()
            .map_err(|error| not_sent(&error))?;
        let mut last = None;
        for address in addresses {
            match TcpStream::connect_timeout(&address, CONNECT_TIMEOUT) {
                Ok(stream) => {
                    let set = stream
                        .set_nodelay(true)
                        .and_then(|()| stream.set_read_timeout(Some(RESPONSE_TIMEOUT)))
                        .and_then(|()| stream.set_write_timeout(Some(RESPONSE_TIMEOUT)));
                    return set.map(|()| stream).map_err(|error| not_sent(&error));
                }
                Err(error) => last = Some(error),
            }
        }
        Err(match last {
            Some(error) => not_sent(&error),
            None => not_sent(&"the host has no address"),
        })
    }

    /// A failure once the request may have reached the server: its answer was lost.
    fn lost(&self, error: impl std::fmt::Display) -> anyhow::Error {
        Transient(format!(
            "cannot reach airlock at {}: {error}",
            crate::url::without_userinfo(&self.base)
        ))
        .into()
    }
}

/// `http://host[:port][/prefix]` → (`host:port`, `/prefix`). The port defaults to 80.
fn split(base: &str) -> Result<(String, String), String> {
    let rest = base
        .get(7..)
        .filter(|_| serves(base))
        .ok_or("not http://")?;
    let (authority, prefix) = match rest.find(['/', '?', '#']) {
        Some(at) if rest[at..].starts_with('/') => (&rest[..at], &rest[at..]),
        Some(_) => return Err("a query or fragment has no place in it".into()),
        None => (rest, ""),
    };
    if authority.is_empty() || authority.contains('@') {
        return Err("it names no host (or carries a user name)".into());
    }
    let has_port = match authority.rfind(':') {
        Some(at) => !authority[at..].contains(']'),
        None => false,
    };
    let authority = if has_port {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    Ok((authority, prefix.to_owned()))
}

/// The answer as sent: read until it is whole (its head, then its body by its
/// `Content-Length` or its last chunk) or the server closes (the request asked it to), so
/// that a server or proxy keeping the connection open costs nothing.
fn read_answer(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut raw = Vec::with_capacity(4096);
    let mut buffer = [0u8; 8192];
    while !whole(&raw) {
        let read = match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        raw.extend_from_slice(&buffer[..read]);
        if raw.len() as u64 > MAX_ANSWER {
            return Err(std::io::Error::other("the answer is over 16 MiB"));
        }
    }
    Ok(raw)
}

/// How an answer's body ends.
enum Framing {
    Length(usize),
    Chunked,
    /// At the close of the connection.
    Close,
}

/// An answer's head: status, headers (names in lower case), where the body starts and
/// how it ends. `Ok(None)` while the head is incomplete.
type Head = (u16, Vec<(String, String)>, usize, Framing);

fn parse_head(raw: &[u8]) -> Result<Option<Head>, String> {
    let Some(end) = raw.windows(4).position(|window| window == b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| "the answer's head is not text")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|rest| rest.get(2..5))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| format!("not an HTTP/1.1 answer: {status_line:?}"))?;
    let mut headers = Vec::new();
    for line in lines {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("a malformed header line: {line:?}"))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(header, _)| header == name)
            .map(|(_, value)| value.as_str())
    };
    let framing = if header("transfer-encoding").is_some_and(|value| value.contains("chunked")) {
        Framing::Chunked
    } else if let Some(length) = header("content-length") {
        Framing::Length(
            length
                .parse()
                .map_err(|_| format!("a malformed Content-Length: {length:?}"))?,
        )
    } else {
        Framing::Close
    };
    Ok(Some((status, headers, end + 4, framing)))
}

/// Whether `raw` holds a whole answer, so far as its head says.
fn whole(raw: &[u8]) -> bool {
    match parse_head(raw) {
        Ok(Some((_, _, start, Framing::Length(length)))) => raw.len() >= start + length,
        Ok(Some((_, _, start, Framing::Chunked))) => dechunk(&raw[start..]).is_ok(),
        // A broken head is read no further; parsing it reports why.
        Err(_) => true,
        Ok(None | Some((_, _, _, Framing::Close))) => false,
    }
}

type Parsed = (u16, Vec<(String, String)>, Vec<u8>);

/// Status, headers and body of a whole HTTP/1.1 answer.
fn parse_answer(raw: &[u8]) -> Result<Parsed, String> {
    let (status, headers, start, framing) =
        parse_head(raw)?.ok_or("the answer broke off in its head")?;
    let rest = &raw[start..];
    let body = match framing {
        Framing::Chunked => dechunk(rest)?,
        Framing::Length(length) => rest
            .get(..length)
            .ok_or("the answer broke off in its body")?
            .to_vec(),
        Framing::Close => rest.to_vec(),
    };
    Ok((status, headers, body))
}

/// The body of a chunked answer.
fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|window| window == b"\r\n")
            .ok_or("the answer broke off in a chunk's size")?;
        let size_text = std::str::from_utf8(&rest[..line_end]).unwrap_or_default();
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("a malformed chunk size: {size_text:?}"))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        let chunk = rest.get(..size).ok_or("the answer broke off in a chunk")?;
        body.extend_from_slice(chunk);
        rest = rest
            .get(size..)
            .and_then(|after| after.strip_prefix(b"\r\n"))
            .ok_or("a chunk does not end where its size says")?;
    }
}

#[cfg(test)]
#[path = "plain/tests.rs"]
mod tests;
