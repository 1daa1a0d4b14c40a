//! `brain stdio --tenant T`: the same tools over stdin/stdout for one local
//! user. Nothing but MCP messages is written to stdout (logs go to stderr).
//! The caller is the `stdio` credential, which can never be elevated or
//! override the shrink guard.

use anyhow::Context;
use brain_core::ids::TenantId;
use brain_core::model::{CredentialKind, Role};
use brain_core::store::StoreSettings;
use rmcp::ServiceExt;

use crate::auth::Principal;
use crate::mcp::BrainMcp;
use crate::serve::open_store;

pub fn principal(tenant: TenantId) -> Principal {
    Principal {
        tenant,
        kind: CredentialKind::Stdio,
        credential_id: "stdio".to_owned(),
        subject: "stdio".to_owned(),
        role: Role::Agent,
        token_id: None,
        valid_until: None,
    }
}

pub async fn run(tenant: &str, database_url: &str) -> anyhow::Result<()> {
    let tenant = TenantId::parse(tenant).map_err(|e| anyhow::anyhow!("--tenant: {}", e.message))?;
    let store = open_store(database_url, StoreSettings::default()).await?;
    let handler = BrainMcp::local(store, principal(tenant));
    // Other processes on the same PostgreSQL are heard too.
    let stop = tokio_util::sync::CancellationToken::new();
    handler.watch_focus(stop.clone());
    let running = handler
        .serve(rmcp::transport::stdio())
        .await
        .context("stdio initialize failed")?;
    running
        .waiting()
        .await
        .context("stdio session ended with an error")?;
    stop.cancel();
    Ok(())
}
