//! Logging: text or JSON lines on stderr. rmcp logs connection ids at info and
//! whole messages at debug, so its target stays at warn whatever `RUST_LOG` says,
//! unless `RUST_LOG` names rmcp itself (a deliberate choice to see them).

use tracing_subscriber::EnvFilter;

const DEFAULT_FILTER: &str = "info,rmcp=warn,sqlx=warn,tower_http=warn";

/// The filter directives for a `RUST_LOG` value: brain's `rmcp=warn` is always
/// added unless the value names rmcp.
pub fn directives(rust_log: Option<&str>) -> String {
    match rust_log.map(str::trim).filter(|s| !s.is_empty()) {
        None => DEFAULT_FILTER.to_owned(),
        Some(s) if s.contains("rmcp") => s.to_owned(),
        Some(s) => format!("{s},rmcp=warn"),
    }
}

pub fn init(json: bool) {
    let env = std::env::var("RUST_LOG").ok();
    let filter = EnvFilter::try_new(directives(env.as_deref()))
        .unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
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
    }
}
