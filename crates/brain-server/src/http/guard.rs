//! DNS-rebinding protection: `Host` and `Origin` allow-lists for /mcp (SPEC §4).
//! Runs before authentication so a rebinding page learns nothing, not even 401.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::AppState;
use crate::refusal::Refusal;
use axum::response::IntoResponse;
use brain_core::ErrorCode;

/// Parse `host[:port]` (IPv6 in brackets) strictly: a DNS name or an IP
/// address, and an optional decimal port (or `*` where `wildcard_port`).
/// Anything else — userinfo (`a@b`), paths, spaces, empty parts — is `None`,
/// so it can never match an allow-list entry.
fn parse_authority(value: &str, wildcard_port: bool) -> Option<(&str, Option<&str>)> {
    let (host, port) = if let Some(rest) = value.strip_prefix('[') {
        let (h, tail) = rest.split_once(']')?;
        if h.is_empty()
            || !h
                .chars()
                .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
        {
            return None;
        }
        let port = match tail {
            "" => None,
            t => Some(t.strip_prefix(':')?),
        };
        (h, port)
    } else if value.matches(':').count() > 1 {
        // A bare IPv6 address (no port possible without brackets).
        if !value
            .chars()
            .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
        {
            return None;
        }
        (value, None)
    } else {
        let (h, port) = match value.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (value, None),
        };
        let label_ok = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.';
        if h.is_empty() || h.len() > 253 || !h.chars().all(label_ok) {
            return None;
        }
        (h, port)
    };
    match port {
        None => Some((host, None)),
        Some("*") if wildcard_port => Some((host, port)),
        Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => {
            Some((host, Some(p)))
        }
        Some(_) => None,
    }
}

/// An entry without a port matches any port.
pub fn host_allowed(allowed: &[String], host: &str) -> bool {
    let Some((h, p)) = parse_authority(host, false) else {
        return false;
    };
    allowed
        .iter()
        .any(|entry| match parse_authority(entry.trim(), false) {
            Some((eh, ep)) => eh.eq_ignore_ascii_case(h) && (ep.is_none() || ep == p),
            None => false,
        })
}

/// Entries are `scheme://host[:port]`, `:*` for any port, or `null`. An
/// origin is exactly `scheme://host[:port]`: no userinfo, path or query.
pub fn origin_allowed(allowed: &[String], origin: &str) -> bool {
    if origin == "null" {
        return allowed.iter().any(|e| e.trim() == "null");
    }
    let Some((os, oauth)) = origin.split_once("://") else {
        return false;
    };
    if os.is_empty()
        || !os
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return false;
    }
    let Some((oh, op)) = parse_authority(oauth, false) else {
        return false;
    };
    allowed.iter().any(|entry| {
        let Some((es, eauth)) = entry.trim().split_once("://") else {
            return false;
        };
        let Some((eh, ep)) = parse_authority(eauth, true) else {
            return false;
        };
        es.eq_ignore_ascii_case(os) && eh.eq_ignore_ascii_case(oh) && (ep == op || ep == Some("*"))
    })
}

pub async fn host_and_origin(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let forbidden = || {
        Refusal::new(
            ErrorCode::Forbidden,
            "this Host or Origin is not allowed; add it to BRAIN_ALLOWED_HOSTS or BRAIN_ALLOWED_ORIGINS",
        )
        .into_response()
    };
    // One Host only: with two, a proxy and brain could each read a different one.
    let mut hosts = req.headers().get_all(http::header::HOST).iter();
    let host = hosts
        .next()
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if hosts.next().is_some() {
        return forbidden();
    }
    // An absolute-form target (`POST http://a/mcp`) names the authority that
    // counts (RFC 9112 §3.2.2): it must pass too, and carries no userinfo.
    let target = req.uri().authority().map(|a| a.as_str().to_owned());
    let host_ok = match (&host, &target) {
        (_, Some(t)) => host_allowed(&state.allowed_hosts, t),
        (Some(h), None) => host_allowed(&state.allowed_hosts, h),
        (None, None) => false,
    } && host
        .as_deref()
        .is_none_or(|h| host_allowed(&state.allowed_hosts, h));
    let mut origins = req.headers().get_all(http::header::ORIGIN).iter();
    let origin_ok = match (origins.next(), origins.next()) {
        (None, _) => true,
        (Some(v), None) => v
            .to_str()
            .is_ok_and(|o| origin_allowed(&state.allowed_origins, o)),
        (Some(_), Some(_)) => false,
    };
    if !host_ok || !origin_ok {
        return forbidden();
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
        // Userinfo, paths, junk ports and empty parts never match.
        for bad in [
            "localhost:1@evil.com",
            "evil.com@localhost",
            "localhost:80/x",
            "localhost:",
            "localhost:http",
            "localhost:123456",
            ":8080",
            "",
            "local host",
            "[::1",
            "[::1]x",
            "[evil.com]:80",
        ] {
            assert!(!host_allowed(&a, bad), "{bad:?} passed");
        }
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
        for bad in [
            "http://localhost:1@evil.com",
            "http://user@localhost:3000",
            "http://localhost:3000/path",
            "http://localhost:*",
            "localhost:3000",
            "://localhost:3000",
        ] {
            assert!(!origin_allowed(&a, bad), "{bad:?} passed");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2_000))]

        /// Arbitrary Host and Origin values never panic the parser, and a value
        /// with userinfo never matches.
        #[test]
        fn the_parser_never_panics(value in "\\PC{0,64}", entry in "\\PC{0,32}") {
            let allowed = vec![entry, "localhost".to_owned(), "http://localhost:*".to_owned()];
            let host = host_allowed(&allowed, &value);
            let origin = origin_allowed(&allowed, &value);
            if value.contains('@') {
                proptest::prop_assert!(!host && !origin, "{value:?} passed");
            }
        }
    }
}
