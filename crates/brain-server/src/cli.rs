//! The `brain` command line (SPEC §6, §7).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use brain_core::error::StoreError;
use brain_core::ids::TenantId;
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

impl Cli {
    /// Whether the command answers and exits (no server: `serve` and
    /// `stdio` are servers), so that its log holds errors only.
    pub fn is_one_shot(&self) -> bool {
        !matches!(self.command, Command::Serve(_) | Command::Stdio { .. })
    }
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
    /// Receipts: verify a tenant's hash chain.
    #[command(subcommand)]
    Receipts(ReceiptsCommand),
    /// Tenants: what one holds; deleting one.
    #[command(subcommand)]
    Tenant(TenantCommand),
    /// Projects: deleting one.
    #[command(subcommand)]
    Project(ProjectCommand),
    /// Write everything of a tenant as one line of canonical JSON per row
    /// (receipts with their hashes included), to move it to another store.
    Export {
        #[arg(long)]
        tenant: String,
        /// The file to write (standard output when omitted).
        #[arg(short = 'o', long = "output")]
        output: Option<std::path::PathBuf>,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Read an export into this database's tenant of the same name, which must
    /// not exist yet: all of it in one transaction, or nothing.
    Import {
        #[arg(long)]
        tenant: String,
        /// The export to read (standard input when omitted).
        #[arg(short = 'i', long = "input")]
        input: Option<std::path::PathBuf>,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Print a link that opens the operator console signed in: a short-lived
    /// operator JWT in the URL's fragment (browsers never send a fragment).
    ConsoleLink {
        /// The tenant the console shows (claim `tenant`).
        #[arg(long)]
        tenant: String,
        /// The operator's subject (claim `sub`).
        #[arg(long)]
        sub: String,
        /// Lifetime in seconds.
        #[arg(long, default_value_t = 900)]
        ttl: u64,
        /// The server's public base URL.
        #[arg(
            long = "url",
            env = "BRAIN_PUBLIC_URL",
            default_value = "http://127.0.0.1:8080"
        )]
        public_url: String,
        #[command(flatten)]
        jwt: Box<JwtConfig>,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Exit 0 when the server's readiness endpoint answers 200 (container healthchecks).
    Healthcheck {
        #[arg(long, default_value = "http://127.0.0.1:8080/readyz")]
        url: String,
    },
    /// Serve the same tools over stdin/stdout for one local user (logs go to stderr).
    Stdio {
        /// The tenant every call acts in.
        #[arg(long)]
        tenant: String,
        #[command(flatten)]
        database: DatabaseConfig,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Print a development HS256 JWT. Signed with BRAIN_JWT_HS256_SECRET, or,
    /// when that is unset, with the secret `serve --dev` keeps beside the database.
    Mint {
        /// The tenant the token acts in (claim `tenant`).
        #[arg(long)]
        tenant: String,
        /// Who the token names (claim `sub`); with the issuer, the credential's identity.
        #[arg(long)]
        sub: String,
        /// agent, operator or relay.
        #[arg(long, default_value = "agent")]
        role: String,
        /// Lifetime in seconds.
        #[arg(long, default_value_t = 3600)]
        ttl: u64,
        #[command(flatten)]
        jwt: Box<JwtConfig>,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Shared tokens: one opaque token used by many agents of a tenant.
    #[command(subcommand)]
    Shared(SharedCommand),
}

#[derive(Debug, Subcommand)]
pub enum ReceiptsCommand {
    /// Walk the tenant's chain: OK with the count and tip, or the first bad seq
    /// and why (hash_mismatch, prev_hash_mismatch, seq_gap); non-zero exit when bad.
    Verify {
        /// The tenant whose chain is walked; an unknown tenant is an error.
        #[arg(long)]
        tenant: String,
        #[command(flatten)]
        database: DatabaseConfig,
    },
}

#[derive(Debug, Subcommand)]
pub enum ProjectCommand {
    /// Delete a project: every body and text of it (focus and slot revisions,
    /// sessions, artifacts, documents). Its receipts stay, and a
    /// `project_deleted` receipt (credential kind `cli`) records the deletion.
    Delete {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        project: String,
        #[command(flatten)]
        database: DatabaseConfig,
    },
}

#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Delete everything of a tenant, its receipts included. `--confirm` must
    /// repeat the tenant's name.
    Delete {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        confirm: String,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Print the bytes of bodies and texts the tenant holds and the quota
    /// (BRAIN_TENANT_QUOTA_BYTES as the server last wrote it; 0 = unlimited).
    Usage {
        #[arg(long)]
        tenant: String,
        #[command(flatten)]
        database: DatabaseConfig,
    },
}

#[derive(Debug, Subcommand)]
pub enum SharedCommand {
    /// Create a token and print it once; only its hash is stored.
    Create {
        /// The tenant the token's callers act in.
        #[arg(long)]
        tenant: String,
        /// A name for the token, unique among the tenant's live tokens.
        #[arg(long)]
        name: String,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// Revoke the live token with this name.
    Revoke {
        /// The tenant that holds the token.
        #[arg(long)]
        tenant: String,
        /// The name given at create.
        #[arg(long)]
        name: String,
        #[command(flatten)]
        database: DatabaseConfig,
    },
    /// List the tenant's tokens (never their secrets).
    List {
        /// The tenant whose tokens are listed.
        #[arg(long)]
        tenant: String,
        #[command(flatten)]
        database: DatabaseConfig,
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
        Command::ConsoleLink {
            tenant,
            sub,
            ttl,
            public_url,
            jwt,
            database,
        } => {
            // The link travels (chat, history): keep it short-lived.
            if ttl > 3600 {
                bail!("--ttl is at most 3600 seconds for a console link");
            }
            let token = mint_token(*jwt, &database, &tenant, &sub, "operator", ttl)?;
            println!(
                "{}/brain-admin/#token={token}",
                public_url.trim_end_matches('/')
            );
            Ok(())
        }
        Command::Token(TokenCommand::Mint {
            tenant,
            sub,
            role,
            ttl,
            jwt,
            database,
        }) => {
            let token = mint_token(*jwt, &database, &tenant, &sub, &role, ttl)?;
            println!("{token}");
            Ok(())
        }
        Command::Token(TokenCommand::Shared(cmd)) => run_shared(cmd).await,
        Command::Healthcheck { url } => crate::health::check(&url).await,
        Command::Receipts(ReceiptsCommand::Verify { tenant, database }) => {
            let tenant = tenant_arg(&tenant)?;
            let store = open_store(&database.url, StoreSettings::default()).await?;
            let fail = |e: StoreError| anyhow::anyhow!("{e}");
            if !store.tenant_exists(&tenant).await.map_err(fail)? {
                bail!(
                    "no tenant {tenant} in this database (a tenant exists once it has made a call)"
                );
            }
            let verdict = brain_core::store::verify_receipts(
                store.as_ref(),
                &tenant,
                brain_core::store::VERIFY_PAGE,
            )
            .await
            .map_err(fail)?;
            match verdict {
                Ok((n, seq, hash)) => {
                    println!("OK tenant={tenant} receipts={n} tip_seq={seq} tip={hash}");
                    Ok(())
                }
                Err((bad, fault)) => {
                    let why = serde_json::to_value(fault)?;
                    println!(
                        "BAD tenant={tenant} seq={bad} reason={}",
                        why.as_str().unwrap_or("?")
                    );
                    bail!("the receipt chain of {tenant} is broken at seq {bad}")
                }
            }
        }
        Command::Export {
            tenant,
            output,
            database,
        } => crate::portable::export(&tenant_arg(&tenant)?, output.as_deref(), &database.url).await,
        Command::Import {
            tenant,
            input,
            database,
        } => crate::portable::import(&tenant_arg(&tenant)?, input.as_deref(), &database.url).await,
        Command::Project(ProjectCommand::Delete {
            tenant,
            project,
            database,
        }) => {
            let tenant = tenant_arg(&tenant)?;
            let key = brain_core::ids::ProjectKey::parse(&project)
                .map_err(|e| anyhow::anyhow!("--project: {}", e.message))?;
            let store = open_store(&database.url, StoreSettings::default()).await?;
            store
                .project_delete(&cli_operator(&tenant), &key)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            println!("deleted project={key} tenant={tenant}");
            Ok(())
        }
        Command::Tenant(TenantCommand::Delete {
            tenant,
            confirm,
            database,
        }) => {
            if confirm != tenant {
                bail!("--confirm must repeat the tenant's name ({tenant}): nothing was deleted");
            }
            let tenant = tenant_arg(&tenant)?;
            let store = open_store(&database.url, StoreSettings::default()).await?;
            if !store
                .tenant_delete(&tenant)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?
            {
                bail!("no tenant {tenant} in this database");
            }
            println!("deleted tenant={tenant}");
            Ok(())
        }
        Command::Tenant(TenantCommand::Usage { tenant, database }) => {
            let tenant = tenant_arg(&tenant)?;
            let store = open_store(&database.url, StoreSettings::default()).await?;
            let u = store
                .tenant_usage(&tenant)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let percent = match u.quota_bytes {
                0 => "unlimited".to_owned(),
                q => format!("{:.1}%", u.bytes as f64 * 100.0 / q as f64),
            };
            println!(
                "tenant={tenant} bytes={} quota_bytes={} used={percent}",
                u.bytes, u.quota_bytes
            );
            Ok(())
        }
        Command::Stdio { tenant, database } => crate::stdio::run(&tenant, &database.url).await,
    }
}

/// The operator at this machine's shell: whoever can run the CLI against the
/// database is trusted with it; receipts name them `cli` and the OS user.
fn cli_operator(tenant: &TenantId) -> brain_core::model::Caller {
    let user = std::env::var("USER").unwrap_or_else(|_| "unknown".to_owned());
    brain_core::model::Caller {
        tenant: tenant.clone(),
        kind: brain_core::model::CredentialKind::Cli,
        credential_id: format!("cli:{user}"),
        subject: user,
        role: brain_core::model::Role::Operator,
        connection_id: None,
        token_id: None,
        tracer_session: None,
    }
}

fn tenant_arg(t: &str) -> anyhow::Result<TenantId> {
    TenantId::parse(t).map_err(|e| anyhow::anyhow!("--tenant: {}", e.message))
}

async fn run_shared(cmd: SharedCommand) -> anyhow::Result<()> {
    let fail = |e: StoreError| anyhow::anyhow!("{e}");
    match cmd {
        SharedCommand::Create {
            tenant,
            name,
            database,
        } => {
            let store = open_store(&database.url, StoreSettings::default()).await?;
            let (t, secret) = store
                .shared_token_create(&tenant_arg(&tenant)?, &name)
                .await
                .map_err(fail)?;
            eprintln!(
                "created shared token {} ({}); it is shown once:",
                t.name, t.token_id
            );
            println!("{secret}");
        }
        SharedCommand::Revoke {
            tenant,
            name,
            database,
        } => {
            let store = open_store(&database.url, StoreSettings::default()).await?;
            let t = store
                .shared_token_revoke(&tenant_arg(&tenant)?, &name)
                .await
                .map_err(fail)?;
            println!("revoked {} ({})", t.name, t.token_id);
        }
        SharedCommand::List { tenant, database } => {
            let store = open_store(&database.url, StoreSettings::default()).await?;
            for t in store
                .shared_token_list(&tenant_arg(&tenant)?)
                .await
                .map_err(fail)?
            {
                let state = if t.revoked_at.is_some() {
                    "revoked"
                } else {
                    "live"
                };
                println!(
                    "{}\t{}\t{}\t{}",
                    t.token_id,
                    t.name,
                    state,
                    brain_core::model::rfc3339(&t.created_at)
                );
            }
        }
    }
    Ok(())
}

const NO_CREDENTIAL: &str = "no credential is configured: set BRAIN_JWT_HS256_SECRET or BRAIN_JWT_PUBLIC_KEYS, or create a shared token; brain never starts open to anyone";

async fn run_serve(mut cfg: ServeConfig) -> anyhow::Result<()> {
    if cfg.dev && cfg.jwt.hs256_secret.is_none() {
        cfg.jwt.hs256_secret = Some(crate::dev::secret(&cfg.database.url)?);
    }
    let profiles =
        crate::profiles::Profiles::parse(&cfg.tool_profiles).map_err(anyhow::Error::msg)?;
    let auth = Authenticator::from_config(&cfg.jwt)?;
    // A SQLite file that does not exist yet cannot hold a shared token: refuse
    // before creating it.
    if !auth.is_configured() && crate::dev::sqlite_file_missing(&cfg.database.url) {
        bail!(NO_CREDENTIAL);
    }
    let store = open_store(
        &cfg.database.url,
        StoreSettings {
            idle_secs: cfg.session_idle_secs,
            connection_idle_secs: i64::try_from(cfg.connection_idle_secs).unwrap_or(i64::MAX),
            remember_focus: cfg.focus_memory,
            pool_size: cfg.db_pool_size,
        },
    )
    .await?;
    store
        .set_tenant_quota(cfg.tenant_quota_bytes)
        .await
        .map_err(|e| anyhow::anyhow!("cannot record BRAIN_TENANT_QUOTA_BYTES: {e}"))?;
    if !auth.is_configured() && !store.shared_token_exists().await? {
        bail!(NO_CREDENTIAL);
    }
    let listener = TcpListener::bind(cfg.listen)
        .await
        .with_context(|| format!("cannot listen on {}", cfg.listen))?;
    // `stop` ends accepting and lets in-flight calls finish; `cut`, fired after
    // the grace period, ends MCP connections and streams that are still open.
    let stop = CancellationToken::new();
    let cut = CancellationToken::new();
    auth.start(cut.clone()).await;
    let state = AppState::from(crate::http::AppParts {
        store: store.clone(),
        auth: Arc::new(auth),
        public_url: cfg.public_url(),
        allowed_hosts: Arc::new(cfg.allowed_hosts.clone()),
        allowed_origins: Arc::new(cfg.allowed_origins.clone()),
        init_params: crate::http::InitParams::new(Duration::from_secs(cfg.connection_idle_secs)),
        elevation_max_secs: cfg.elevation_max_secs,
        admin_limiter: crate::http::admin_limiter(),
        limits: crate::http::limits::Limits::new(crate::http::limits::LimitSettings {
            rate_per_sec: cfg.rate_limit_per_sec,
            max_connections_per_credential: cfg.max_connections_per_credential,
            max_connections_per_tenant: cfg.max_connections_per_tenant,
            max_connections: cfg.max_connections,
            max_in_flight_per_credential: cfg.max_in_flight_per_credential,
            ..Default::default()
        }),
        probes: Default::default(),
    });
    let sockets = crate::serve::SocketLimits {
        max_sockets: crate::serve::fit_socket_cap(cfg.max_sockets),
        header_timeout: Duration::from_secs(cfg.header_timeout_secs.max(1)),
        ..Default::default()
    };
    if let Some(addr) = cfg.metrics_listen {
        let metrics = TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr} for metrics"))?;
        tracing::info!(%addr, "metrics listening");
        tokio::spawn(serve(
            metrics,
            crate::http::metrics_router(state.clone()),
            stop.clone(),
            sockets,
        ));
    }
    let app = router(
        state,
        HttpOptions {
            connection_idle: Duration::from_secs(cfg.connection_idle_secs),
            shutdown: cut.clone(),
            metrics: cfg.metrics_listen.is_none(),
            profiles,
        },
    );
    let addr = listener.local_addr()?;
    tokio::spawn(signal_shutdown(stop.clone()));
    tokio::spawn(crate::briefs::schedule(
        store.clone(),
        Duration::from_secs(cfg.brief_interval_secs.max(1)),
        stop.clone(),
    ));
    let grace = Duration::from_secs(cfg.shutdown_grace_secs);
    let cutter = {
        let (stop, cut) = (stop.clone(), cut.clone());
        tokio::spawn(async move {
            stop.cancelled().await;
            tracing::info!(
                grace_secs = grace.as_secs(),
                "shutting down: finishing in-flight calls"
            );
            tokio::time::sleep(grace).await;
            cut.cancel();
        })
    };
    tracing::info!(%addr, max_sockets = sockets.max_sockets, "brain listening; MCP at /mcp");
    if cfg.dev {
        crate::dev::print_client_config(&cfg, addr, store.as_ref()).await?;
    }
    serve(listener, app, stop, sockets).await?;
    cut.cancel();
    cutter.abort();
    store.close().await;
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

/// A development HS256 JWT, signed with BRAIN_JWT_HS256_SECRET or the secret
/// `serve --dev` keeps beside the database.
fn mint_token(
    mut jwt: JwtConfig,
    database: &DatabaseConfig,
    tenant: &str,
    sub: &str,
    role: &str,
    ttl: u64,
) -> anyhow::Result<String> {
    if jwt.hs256_secret.is_none() {
        jwt.hs256_secret = crate::dev::existing_secret(&database.url)?;
    }
    let Some(secret) = jwt.hs256_secret.clone() else {
        bail!(
            "minting a token needs BRAIN_JWT_HS256_SECRET, or the secret `brain serve --dev` keeps at {}",
            crate::dev::secret_path(&database.url).display()
        );
    };
    // The same check `serve` makes, so a token is never minted that no
    // server would accept.
    Authenticator::from_config(&jwt)?;
    crate::token::mint(&crate::token::MintRequest {
        secret: secret.expose(),
        issuer: &jwt.issuer,
        audience: &jwt.audience,
        tenant,
        subject: sub,
        role,
        ttl_secs: ttl,
    })
}

#[cfg(test)]
mod tests {
    /// clap checks argument ids only when a command is parsed; a duplicate id
    /// (two flattened configs both naming a field `url`) would panic at run time.
    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
