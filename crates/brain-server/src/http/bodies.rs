//! Request bodies (SPEC §4): at most `MAX_BODY_BYTES`, arriving within
//! [`BODY_TIMEOUT`], with JSON-RPC method names of bounded length; errors
//! in brain's envelope; a connection closed after a refused body.

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use brain_core::ErrorCode;
use http::{HeaderValue, StatusCode};

use super::MAX_BODY_BYTES;
use crate::refusal::Refusal;

pub fn payload_too_large(message: &str) -> Response {
    Refusal::new(ErrorCode::PayloadTooLarge, message).into_response()
}

/// A request body must arrive within this, however slowly it trickles.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest JSON-RPC method name accepted; rmcp echoes and logs unknown ones.
const MAX_METHOD_BYTES: usize = 128;

fn too_large() -> Response {
    payload_too_large("the request body is larger than 1 MiB")
}

/// On every route: a declared body over `MAX_BODY_BYTES` is 413 in the error
/// envelope at once, before anything reads it.
pub async fn limit_declared_body(req: Request, next: Next) -> Response {
    let declared = req
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return too_large();
    }
    next.run(req).await
}

/// On every route: a refusal (4xx) of a request that carries a body says
/// `Connection: close`. Most refusals answer before the body is read (no
/// credential, the rate limit, a declared size over the limit), and hyper
/// then closes the socket rather than read what is left; without the header
/// a keep-alive client sends its next request into a closed socket.
pub async fn close_after_refusal(req: Request, next: Next) -> Response {
    let has_body = declares_body(req.headers());
    let mut resp = next.run(req).await;
    if has_body && resp.status().is_client_error() {
        resp.headers_mut()
            .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
    }
    resp
}

/// On the routes that read bodies, after authentication (an unauthenticated
/// caller is answered without its body being read): the body is read whole,
/// up to `MAX_BODY_BYTES` (413, chunked or not) and within `BODY_TIMEOUT`
/// (408), and a JSON-RPC method name longer than 128 bytes is refused (400).
pub async fn read_body(req: Request, next: Next) -> Response {
    // A DELETE (which ends an MCP connection) takes no in-flight place, so it
    // must hold nothing: one that says it carries a body is refused before
    // any of it is read.
    if req.method() == http::Method::DELETE && declares_body(req.headers()) {
        return payload_too_large("a DELETE carries no body; send it without one");
    }
    let (parts, body) = req.into_parts();
    let bytes = match tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, MAX_BODY_BYTES))
        .await
    {
        Ok(Ok(b)) => b,
        Ok(Err(_)) => return too_large(),
        Err(_) => {
            return Refusal::new(
                ErrorCode::InvalidArgument,
                "the request body did not arrive within 30 s",
            )
            .with_status(StatusCode::REQUEST_TIMEOUT)
            .into_response();
        }
    };
    if method_too_long(&bytes) {
        return Refusal::new(
            ErrorCode::InvalidArgument,
            "the JSON-RPC method name is longer than 128 bytes",
        )
        .with_status(StatusCode::BAD_REQUEST)
        .into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// Whether a request says it carries a body: a `Content-Length` other than
/// 0, or any `Transfer-Encoding`.
fn declares_body(headers: &http::HeaderMap) -> bool {
    headers.contains_key(http::header::TRANSFER_ENCODING)
        || headers
            .get_all(http::header::CONTENT_LENGTH)
            .iter()
            .any(|v| v.to_str().map_or(true, |v| v.trim() != "0"))
}

/// Whether a JSON-RPC message names a method over the limit. A byte scan,
/// not a parse: it runs on every request body (up to 1 MiB) before rmcp parses
/// it anyway. It finds each unescaped `"method"` key and measures its string
/// value; a nested argument of that name could only make a call be refused
/// that no brain tool accepts (their arguments refuse unknown fields).
pub(crate) fn method_too_long(body: &[u8]) -> bool {
    const KEY: &[u8] = b"\"method\"";
    if body.len() <= MAX_METHOD_BYTES {
        return false;
    }
    let mut from = 0;
    while let Some(at) = body[from..].windows(KEY.len()).position(|w| w == KEY) {
        let mut i = from + at + KEY.len();
        from = i;
        while i < body.len() && matches!(body[i], b' ' | b'\t' | b'\r' | b'\n' | b':') {
            i += 1;
        }
        if body.get(i) != Some(&b'"') {
            continue;
        }
        let start = i + 1;
        let mut j = start;
        while j < body.len() && body[j] != b'"' {
            j += if body[j] == b'\\' { 2 } else { 1 };
        }
        if j - start > MAX_METHOD_BYTES {
            return true;
        }
    }
    // A key can be spelled with escapes (`"metho\u0064"`), which the scan
    // does not see and rmcp reads as `method`: a body with any `\u` escape is
    // parsed (rare in itself; clients that escape all non-ASCII text pay one
    // parse more).
    body.windows(2).any(|w| w == b"\\u") && parsed_method_too_long(body)
}

fn parsed_method_too_long(body: &[u8]) -> bool {
    let too_long = |m: &serde_json::Value| {
        m.get("method")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|s| s.len() > MAX_METHOD_BYTES)
    };
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(serde_json::Value::Array(items)) => items.iter().any(too_long),
        Ok(m) => too_long(&m),
        Err(_) => false,
    }
}

/// rmcp answers some malformed requests in plain text (415 for a body it
/// cannot parse, 400 for a bad protocol version, echoing the client's value);
/// every such answer becomes the error envelope, with a fixed message.
pub async fn envelope_errors(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let status = resp.status();
    let is_json = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json") || t.starts_with("text/event-stream"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return resp;
    }
    let (code, message) = match status {
        StatusCode::NOT_FOUND => (
            ErrorCode::SessionNotFound,
            "unknown MCP session; initialize a new connection",
        ),
        s if s.is_server_error() => (
            ErrorCode::Internal,
            "the server could not answer; retry later",
        ),
        _ => (
            ErrorCode::InvalidArgument,
            "the request is not a valid MCP message for this endpoint (check the JSON body, \
             the Accept and Content-Type headers and MCP-Protocol-Version)",
        ),
    };
    Refusal::new(code, message)
        .with_status(status)
        .into_response()
}
