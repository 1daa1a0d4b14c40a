//! The `brain` command line (SPEC §6, §7).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use brain_core::error::StoreError;
use brain_core::ids::TenantId;
use brain_core::store::StoreSettings;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::auth::Authenticator;
use crate::config::{DatabaseConfig, JwtConfig, ServeConfig};
use crate::http::{AppState, HttpOptions, router};
use crate::serve::{open_store, serve};

mod commands;
mod shared_tokens;
pub use commands::*;
use shared_tokens::run_shared;

/// Run one `brain` command. One arm per command, each a few lines: longer
/// than 80 lines, but read as the table of what each command does.
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

const NO_CREDENTIAL: &str = "no credential is configured: set BRAIN_JWT_HS256_SECRET or BRAIN_JWT_PUBLIC_KEYS, or create a shared token; brain never starts open to anyone";

/// `brain serve`: the start-up in the order it must happen (credentials
/// checked before a database file is created, the store opened, a listener,
/// the state, the background tasks, then serving until the shutdown). Kept
/// as one sequence, longer than 80 lines: split, the order that makes it
/// safe would be spread over several functions.
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
            ..StoreSettings::default()
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
