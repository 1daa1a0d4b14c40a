//! `brain`: a thin binary over brain-server's library.
#![forbid(unsafe_code)]

use clap::Parser;

/// mimalloc instead of glibc malloc: a request allocates and frees many small
/// buffers across tokio's worker threads, and glibc's malloc and free (with
/// its consolidation) were about a tenth of the server's CPU under load.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = brain_server::cli::Cli::parse();
    brain_server::telemetry::init(
        cli.log_format.eq_ignore_ascii_case("json"),
        cli.is_one_shot(),
    );
    match brain_server::cli::run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // Once, on stderr; a log line too would print it twice.
            eprintln!("brain: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
