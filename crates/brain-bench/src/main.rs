//! `brain-bench`: drive a running brain (or the bare rmcp echo baseline) over
//! Streamable HTTP and print throughput, latency percentiles, errors and the
//! server's CPU per call. A load generator, not a test: `scripts/bench` runs
//! it against both stores beside pgbench and the echo server, in one run.

mod echo;
mod load;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "brain-bench",
    about = "Load generator for brain over Streamable HTTP"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one workload at one or more concurrencies; one line per run.
    Run(load::RunArgs),
    /// Serve a bare rmcp 3.11 server with one `echo` tool (the baseline).
    Echo {
        #[arg(long, default_value = "127.0.0.1:8090")]
        listen: String,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Run(args) => load::run(args).await,
        Command::Echo { listen } => echo::serve(&listen).await,
    }
}
