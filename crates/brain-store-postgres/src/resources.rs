//! Focus bodies as MCP resources (SPEC §2.11): the listing, and the one
//! LISTEN connection per replica that hears every replica's committed writes
//! (`write_focus` NOTIFYs in the writing transaction).

use std::time::Duration;

use brain_core::error::StoreError;
use brain_core::feed::{FocusChange, FocusListener};
use sqlx::postgres::PgListener;

use crate::{PgScope, db};

pub(crate) const CHANNEL: &str = "brain_focus";

/// The change a `brain_focus` notification announces; a malformed one is
/// logged and ignored. Shared with focus memory's listener, which hears the
/// channel in place of this task when it runs.
pub(crate) fn heard(payload: &str) -> Option<FocusChange> {
    let change = FocusChange::from_payload(payload);
    if change.is_none() {
        tracing::warn!("ignored a malformed focus notification");
    }
    change
}

/// Start the replica's listener task. sqlx's `PgListener` reconnects by
/// itself after a lost connection; changes committed while it was away are
/// not replayed (a subscriber re-reads on reconnecting, as MCP clients do).
pub(crate) async fn watch(store: &PgScope, listener: FocusListener) -> Result<(), StoreError> {
    let mut pg = PgListener::connect_with(store.pool()).await.map_err(db)?;
    pg.listen(CHANNEL).await.map_err(db)?;
    tokio::spawn(async move {
        loop {
            match pg.recv().await {
                Ok(n) => {
                    if let Some(change) = heard(n.payload()) {
                        listener(change)
                    }
                }
                // The pool is closing (shutdown): let its connection go, or
                // `Pool::close` would wait for it forever.
                Err(sqlx::Error::PoolClosed) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "focus listener lost its connection; reconnecting");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    });
    Ok(())
}
