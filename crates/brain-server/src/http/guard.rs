//! DNS-rebinding protection: `Host` and `Origin` allow-lists for /mcp (SPEC §4).
//! Runs before authentication so a rebinding page learns nothing, not even 401.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::StatusCode;

use super::{AppState, error_response};

/// Split `host[:port]` (IPv6 in brackets) into host and optional port.
fn split_host(value: &str) -> (&str, Option<&str>) {
    if let Some(rest) = value.strip_prefix('[') {
        if let Some((h, tail)) = rest.split_once(']') {
            return (h, tail.strip_prefix(':'));
        }
        return (value, None);
    }
    match value.rsplit_once(':') {
        // A bare IPv6 address has several colons and no port.
        Some((h, p)) if !h.contains(':') => (h, Some(p)),
        _ => (value, None),
    }
}

/// An entry without a port matches any port.
pub fn host_allowed(allowed: &[String], host: &str) -> bool {
    let (h, p) = split_host(host);
    allowed.iter().any(|entry| {
        let (eh, ep) = split_host(entry.trim());
        eh.eq_ignore_ascii_case(h) && (ep.is_none() || ep == p)
    })
}

/// Entries are `scheme://host[:port]`, `:*` for any port, or `null`.
pub fn origin_allowed(allowed: &[String], origin: &str) -> bool {
    allowed.iter().any(|entry| {
        let entry = entry.trim();
        if entry.eq_ignore_ascii_case(origin) {
            return true;
        }
        let (Some((es, eauth)), Some((os, oauth))) =
            (entry.split_once("://"), origin.split_once("://"))
        else {
            return false;
        };
        if !es.eq_ignore_ascii_case(os) {
            return false;
        }
        let (eh, ep) = split_host(eauth);
        let (oh, op) = split_host(oauth);
        eh.eq_ignore_ascii_case(oh) && (ep == op || (ep == Some("*")))
    })
}

pub async fn host_and_origin(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| req.uri().authority().map(|a| a.as_str().to_owned()));
    let host_ok = host
        .as_deref()
        .is_some_and(|h| host_allowed(&state.allowed_hosts, h));
    let origin_ok = match req.headers().get(http::header::ORIGIN) {
        None => true,
        Some(v) => v
            .to_str()
            .is_ok_and(|o| origin_allowed(&state.allowed_origins, o)),
    };
    if !host_ok || !origin_ok {
        return error_response(
            StatusCode::FORBIDDEN,
            "forbidden",
            "this Host or Origin is not allowed; add it to BRAIN_ALLOWED_HOSTS or BRAIN_ALLOWED_ORIGINS",
        );
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn hosts() {
        let a = v(&["localhost", "127.0.0.1", "::1", "brain.example.com:443"]);
        assert!(host_allowed(&a, "localhost:8080"));
        assert!(host_allowed(&a, "127.0.0.1"));
        assert!(host_allowed(&a, "[::1]:9000"));
        assert!(host_allowed(&a, "brain.example.com:443"));
        assert!(!host_allowed(&a, "brain.example.com:8443"));
        assert!(!host_allowed(&a, "evil.example.com"));
        assert!(!host_allowed(&a, "localhost.evil.com:80"));
    }

    #[test]
    fn origins() {
        let a = v(&[
            "http://localhost:*",
            "http://127.0.0.1:*",
            "https://app.example.com",
        ]);
        assert!(origin_allowed(&a, "http://localhost:3000"));
        assert!(origin_allowed(&a, "http://127.0.0.1:1"));
        assert!(origin_allowed(&a, "https://app.example.com"));
        assert!(!origin_allowed(&a, "https://app.example.com:444"));
        assert!(!origin_allowed(&a, "https://localhost:3000"));
        assert!(!origin_allowed(&a, "http://evil.example.com"));
        assert!(!origin_allowed(&a, "null"));
        assert!(origin_allowed(&v(&["null"]), "null"));
    }
}
