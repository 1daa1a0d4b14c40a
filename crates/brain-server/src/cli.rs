//! The `brain` command line (SPEC §6, §7).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use brain_core::store::StoreSettings;
use clap::{Parser, Subcommand};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::auth::Authenticator;
use crate::config::{DatabaseConfig, JwtConfig, ServeConfig};
use crate::http::{AppState, HttpOptions, router};
use crate::serve::{open_store, serve};

#[derive(Debug, Parser)]
#[command(
    name = "brain",
    version,
    about = "Durable working sessions for AI agents, over MCP"
)]
pub struct Cli {
    /// Log format: text or json.
    #[arg(long, env = "BRAIN_LOG_FORMAT", default_value = "text", global = true)]
    pub log_format: String,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Apply migrations, then serve MCP over Streamable HTTP.
    Serve(Box<ServeConfig>),
    /// Apply pending database migrations and exit.
    Migrate(DatabaseConfig),
    /// Tokens.
    #[command(subcommand)]
    Token(TokenCommand),
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Print a development HS256 JWT signed with BRAIN_JWT_HS256_SECRET.
    Mint {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        sub: String,
        /// agent, operator or relay.
        #[arg(long, default_value = "agent")]
        role: String,
        /// Lifetime in seconds.
        #[arg(long, default_value_t = 3600)]
        ttl: u64,
        #[command(flatten)]
        jwt: JwtConfig,
    },
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(cfg) => run_serve(*cfg).await,
        Command::Migrate(db) => {
            open_store(&db.url, StoreSettings::default()).await?;
            tracing::info!("migrations applied");
            Ok(())
        }
        Command::Token(TokenCommand::Mint {
            tenant,
            sub,
            role,
            ttl,
            jwt,
        }) => {
            let Some(secret) = jwt.hs256_secret else {
                bail!("token mint needs BRAIN_JWT_HS256_SECRET");
            };
            let token = crate::token::mint(&crate::token::MintRequest {
                secret: secret.expose(),
                issuer: &jwt.issuer,
                audience: &jwt.audience,
                tenant: &tenant,
                subject: &sub,
                role: &role,
                ttl_secs: ttl,
            })?;
            println!("{token}");
            Ok(())
        }
    }
}

async fn run_serve(mut cfg: ServeConfig) -> anyhow::Result<()> {
    if cfg.dev && cfg.jwt.hs256_secret.is_none() {
        cfg.jwt.hs256_secret = Some(crate::dev::secret(&cfg.database.url)?);
    }
    let auth = Authenticator::from_config(&cfg.jwt)?;
    if !auth.is_configured() {
        bail!(
            "no credential is configured: set BRAIN_JWT_HS256_SECRET or BRAIN_JWT_PUBLIC_KEYS; brain never starts open to anyone"
        );
    }
    let store = open_store(
        &cfg.database.url,
        StoreSettings {
            idle_secs: cfg.session_idle_secs,
            connection_idle_secs: i64::try_from(cfg.connection_idle_secs).unwrap_or(i64::MAX),
        },
    )
    .await?;
    let listener = TcpListener::bind(cfg.listen)
        .await
        .with_context(|| format!("cannot listen on {}", cfg.listen))?;
    let shutdown = CancellationToken::new();
    let state = AppState {
        store,
        auth: Arc::new(auth),
        public_url: cfg.public_url(),
        allowed_hosts: Arc::new(cfg.allowed_hosts.clone()),
        allowed_origins: Arc::new(cfg.allowed_origins.clone()),
        init_params: crate::http::InitParams::new(Duration::from_secs(cfg.connection_idle_secs)),
    };
    let app = router(
        state,
        HttpOptions {
            connection_idle: Duration::from_secs(cfg.connection_idle_secs),
            shutdown: shutdown.clone(),
        },
    );
    let addr = listener.local_addr()?;
    tokio::spawn(signal_shutdown(shutdown.clone()));
    tracing::info!(%addr, "brain listening; MCP at /mcp");
    if cfg.dev {
        crate::dev::print_client_config(&cfg, addr)?;
    }
    serve(listener, app, shutdown).await?;
    tracing::info!("brain stopped");
    Ok(())
}

async fn signal_shutdown(token: CancellationToken) {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    token.cancel();
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
    token.cancel();
}
