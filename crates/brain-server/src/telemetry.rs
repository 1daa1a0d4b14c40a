//! Logging: text or JSON lines on stderr. rmcp logs connection ids at info and
//! whole messages at debug, so its target stays at warn whatever `RUST_LOG` says,
//! unless a directive of `RUST_LOG` targets rmcp itself (a deliberate choice
//! to see them).

use tracing_subscriber::EnvFilter;

const DEFAULT_FILTER: &str = "info,rmcp=warn,sqlx=warn,tower_http=warn";

/// The filter directives for a `RUST_LOG` value: brain's `rmcp=warn` is always
/// added unless the value names rmcp.
pub fn directives(rust_log: Option<&str>) -> String {
    match rust_log.map(str::trim).filter(|s| !s.is_empty()) {
        None => DEFAULT_FILTER.to_owned(),
        Some(s) if names_rmcp(s) => s.to_owned(),
        Some(s) => format!("{s},rmcp=warn"),
    }
}

/// Whether a directive of `rust_log` sets rmcp's own level: its target (the
/// part before `[` or `=`) is `rmcp` or a module of it. A substring test
/// would take `myapp_normcp=info` for one and let rmcp log at debug.
fn names_rmcp(rust_log: &str) -> bool {
    rust_log.split(',').any(|directive| {
        let directive = directive.trim();
        let end = directive.find(['[', '=']).unwrap_or(directive.len());
        let target = directive[..end].trim();
        target == "rmcp" || target.starts_with("rmcp::")
    })
}

/// What a one-shot command (`receipts verify`, `migrate`, `token …`) logs
/// unless `RUST_LOG` says otherwise: errors only. Its answer is its output;
/// the warnings a server gives its operator at start (the database role, its
/// autovacuum) would be printed on every run.
const ONE_SHOT_FILTER: &str = "error";

/// Logging for `brain serve` and `brain stdio` (`one_shot` false) or for a
/// command that answers and exits.
pub fn init(json: bool, one_shot: bool) {
    let env = std::env::var("RUST_LOG").ok();
    let chosen = match env.as_deref().map(str::trim) {
        None | Some("") if one_shot => ONE_SHOT_FILTER.to_owned(),
        _ => directives(env.as_deref()),
    };
    let filter = EnvFilter::try_new(chosen).unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    if json {
        builder.json().flatten_event(true).init();
    } else {
        builder.init();
    }
}

#[cfg(test)]
mod tests {
    use super::directives;

    #[test]
    fn rmcp_stays_at_warn_unless_named() {
        assert_eq!(directives(None), super::DEFAULT_FILTER);
        assert_eq!(directives(Some("info")), "info,rmcp=warn");
        assert_eq!(
            directives(Some("debug,sqlx=info")),
            "debug,sqlx=info,rmcp=warn"
        );
        assert_eq!(directives(Some("info,rmcp=debug")), "info,rmcp=debug");
        assert_eq!(
            directives(Some("info,rmcp::transport=debug")),
            "info,rmcp::transport=debug"
        );
        // Names that merely hold the letters are not rmcp.
        assert_eq!(
            directives(Some("debug,myapp_normcp=info")),
            "debug,myapp_normcp=info,rmcp=warn"
        );
        assert_eq!(
            directives(Some("debug,xrmcp=info")),
            "debug,xrmcp=info,rmcp=warn"
        );
    }
}
