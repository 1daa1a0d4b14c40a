//! `brain shared`: create, revoke and list a tenant's shared tokens.

use brain_core::error::StoreError;
use brain_core::store::StoreSettings;

use super::{SharedCommand, tenant_arg};
use crate::serve::open_store;

/// Run one `brain shared` command.
pub(super) async fn run_shared(cmd: SharedCommand) -> anyhow::Result<()> {
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
