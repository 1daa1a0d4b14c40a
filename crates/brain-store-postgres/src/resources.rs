//! Focus bodies as MCP resources (SPEC §2.11): the one LISTEN connection per
//! replica that hears every replica's applied ends, and the [`Announcer`]
//! that tells them of this replica's.
//!
//! An applied end is announced after its commit, in a NOTIFY of its own, not
//! in the end's transaction: a transaction that NOTIFYs takes a lock of the
//! whole database cluster at its commit and holds it through the commit's
//! WAL flush, so announcing in the end made the ends of every tenant commit
//! one at a time. The announcement's own transaction waits for no flush
//! (`brain_announce`). What this trades: an end whose replica stops between
//! its commit and the announcement is not announced (a subscriber re-reads
//! when it reconnects, as after a lost listener), and a subscriber may hear
//! of an end just after its caller has the answer.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use brain_core::error::StoreError;
use brain_core::feed::{FocusChange, FocusListener};
use sqlx::postgres::{PgListener, PgPool};

use crate::{PgScope, db};

pub(crate) const CHANNEL: &str = "brain_focus";

/// Announcements waiting to be sent at most; past it they are dropped
/// (counted in `brain_focus_announcements_dropped_total`).
const WAITING_MAX: usize = 4_096;
/// Announcements sent in one statement at most.
const BATCH_MAX: usize = 256;

/// Sends applied ends' changes on [`CHANNEL`] after their commits, in order,
/// batching those that wait. Its task starts with the first announcement.
#[derive(Default)]
pub(crate) struct Announcer {
    waiting: OnceLock<tokio::sync::mpsc::Sender<String>>,
}

impl Announcer {
    /// Queue `change` for every replica's subscribers; never waits.
    pub(crate) fn announce(&self, pool: &PgPool, change: &FocusChange) {
        let waiting = self.waiting.get_or_init(|| {
            let (tx, rx) = tokio::sync::mpsc::channel(WAITING_MAX);
            tokio::spawn(send(pool.clone(), rx));
            tx
        });
        if waiting.try_send(change.to_payload()).is_err() {
            metrics::counter!("brain_focus_announcements_dropped_total").increment(1);
        }
    }
}

pub(crate) type SharedAnnouncer = Arc<Announcer>;

async fn send(pool: PgPool, mut waiting: tokio::sync::mpsc::Receiver<String>) {
    let mut batch = Vec::with_capacity(BATCH_MAX);
    loop {
        batch.clear();
        if waiting.recv_many(&mut batch, BATCH_MAX).await == 0 {
            return;
        }
        let sent = sqlx::query("SELECT brain_announce($1)")
            .bind(&batch)
            .execute(&pool)
            .await;
        match sent {
            Ok(_) => {}
            Err(sqlx::Error::PoolClosed) => return,
            Err(e) => {
                metrics::counter!("brain_focus_announcements_dropped_total")
                    .increment(batch.len() as u64);
                tracing::warn!(error = %e, "focus announcements not sent");
            }
        }
    }
}

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
