//! `brain`: a thin binary over brain-server's library.
#![forbid(unsafe_code)]

use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = brain_server::cli::Cli::parse();
    brain_server::telemetry::init(cli.log_format.eq_ignore_ascii_case("json"));
    match brain_server::cli::run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // Once, on stderr; a log line too would print it twice.
            eprintln!("brain: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
