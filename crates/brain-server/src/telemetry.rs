//! Logging: text or JSON lines on stderr. rmcp logs connection ids at info and
//! whole messages at debug, so its target stays at warn unless RUST_LOG says otherwise.

use tracing_subscriber::EnvFilter;

pub fn init(json: bool) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn,sqlx=warn,tower_http=warn"));
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
