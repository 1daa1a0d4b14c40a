//! Group commit for one tenant's one-call writes (`brain_remember`, and
//! `brain_session_start` into a known project with no bound slot).
//!
//! Every receipt of a tenant is chained to the one before under the tenant's
//! ledger-tip row lock, which its writer holds through its commit's WAL
//! flush; so one tenant's writes commit one at a time, and on one tenant
//! PostgreSQL alone stopped at under half of pgbench's hot write (docs/
//! performance.md). Here a replica's writes of one tenant that queue while
//! another runs are run together in one transaction, one after another in
//! arrival order, and committed with one flush: the chain, the receipts and
//! every answer are what they would be one at a time, only the flush and the
//! lock hand-over are shared. Nobody is answered before the commit.
//!
//! - A write that finds no other of its tenant queued or running runs alone,
//!   in its own statement's transaction, as before: one round trip.
//! - If any statement of a batch fails, the batch is rolled back and each of
//!   its writes runs again alone, so one bad write fails only itself.
//! - A COMMIT the database refuses rolled back: the writes run again alone,
//!   as after a failed statement. A COMMIT whose answer was lost with its
//!   connection may have taken effect: every write of the batch is answered
//!   `outcome: unknown` (`DomainError::outcome_unknown`) and none is
//!   retried. A lone write's statement commits itself, and is answered the
//!   same when its answer is lost.
//! - The batch runs in a task of its own: a caller that goes away does not
//!   leave the others waiting or a transaction open; one that went away
//!   before its batch began is dropped from the queue and writes nothing. A
//!   leader that ends abnormally takes its tenant's queue with it, so the
//!   waiting callers hear an error. At most [`MAX_BATCH`] writes share a
//!   commit; the queue holds only calls whose callers still wait, and a
//!   tenant's entry goes when its queue is empty.
//! - The trade: a batch holds the tenant's tip from its first write's
//!   statement through the others' round trips and the commit's, where a
//!   lone write holds it for its one statement and flush. Other writers of
//!   the tenant (ends, other replicas' batches) wait that long, once per
//!   batch instead of once per write.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use brain_core::error::StoreError;
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::Query;

use crate::db;
use crate::kept_connections::Warm;

/// At most this many writes share one commit.
pub(crate) const MAX_BATCH: usize = 64;

/// Builds a write's statement; called again when its batch is rolled back.
pub(crate) type Build = Box<dyn Fn() -> Query<'static, sqlx::Postgres, PgArguments> + Send + Sync>;

type Answer = Result<Vec<PgRow>, StoreError>;

struct Job {
    build: Build,
    reply: tokio::sync::oneshot::Sender<Answer>,
}

/// The queues of the tenants with a batch running; a tenant present here has
/// a leader task draining its queue.
#[derive(Default)]
pub(crate) struct Groups {
    queues: Mutex<HashMap<String, Vec<Job>>>,
    /// Batches of two or more committed (for tests and the README's numbers).
    shared_commits: AtomicU64,
    /// Batches rolled back for a failed statement (their writes ran again alone).
    rolled_back: AtomicU64,
}

impl Groups {
    /// Run `build`'s statement for `tenant`, alone or with others of the same
    /// tenant; answers its rows once they are committed.
    pub(crate) async fn run(
        self: &Arc<Self>,
        warm: &Arc<Warm>,
        tenant: &str,
        build: Build,
    ) -> Answer {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let lead = {
            let mut queues = self.lock();
            match queues.get_mut(tenant) {
                Some(queue) => {
                    queue.push(Job { build, reply });
                    false
                }
                None => {
                    queues.insert(tenant.to_owned(), vec![Job { build, reply }]);
                    true
                }
            }
        };
        if lead {
            tokio::spawn(self.clone().lead(warm.clone(), tenant.to_owned()));
        }
        answer.await.unwrap_or_else(|_| {
            Err(StoreError::Backend(
                "a group commit ended unanswered".into(),
            ))
        })
    }

    /// Writes of `tenant` waiting for the batch after the running one (for
    /// tests that need a write queued before they go on).
    pub(crate) fn queued(&self, tenant: &str) -> usize {
        self.lock().get(tenant).map_or(0, Vec::len)
    }

    /// Batches committed with more than one write in them, and batches
    /// rolled back for a failed statement.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (
            self.shared_commits.load(Ordering::Relaxed),
            self.rolled_back.load(Ordering::Relaxed),
        )
    }

    async fn lead(self: Arc<Self>, warm: Arc<Warm>, tenant: String) {
        // Should this task end any other way than by finding the queue empty
        // (a panic, a runtime shutting down), the tenant must not keep a
        // queue that no leader drains: its callers would wait forever.
        let mut leading = Leading {
            groups: self.clone(),
            tenant,
            done: false,
        };
        loop {
            let batch: Vec<Job> = {
                let mut queues = self.lock();
                let Some(queue) = queues.get_mut(&leading.tenant) else {
                    leading.done = true;
                    return;
                };
                // A caller that went away before its write was sent writes
                // nothing, as it would have alone.
                queue.retain(|job| !job.reply.is_closed());
                if queue.is_empty() {
                    queues.remove(&leading.tenant);
                    leading.done = true;
                    return;
                }
                let n = queue.len().min(MAX_BATCH);
                queue.drain(..n).collect()
            };
            self.run_batch(&warm, batch).await;
        }
    }

    async fn run_batch(&self, warm: &Warm, mut batch: Vec<Job>) {
        // How many writes shared each commit: their ratio is the batch size
        // an operator reads (docs/deploy.md).
        metrics::counter!("brain_group_commits_total").increment(1);
        metrics::counter!("brain_group_commit_writes_total").increment(batch.len() as u64);
        if batch.len() > 1 {
            let began = std::time::Instant::now();
            let done = together(warm, &batch).await;
            metrics::histogram!("brain_group_commit_seconds").record(began.elapsed().as_secs_f64());
            match done {
                Ok(answers) => {
                    self.shared_commits.fetch_add(1, Ordering::Relaxed);
                    for (job, rows) in batch.into_iter().zip(answers) {
                        let _ = job.reply.send(Ok(rows));
                    }
                    return;
                }
                // Nothing began (no connection in time): answer, do not retry.
                Err(Failed::Begin(e) | Failed::Lost(e)) => {
                    for job in batch {
                        let _ = job.reply.send(Err(StoreError::Backend(e.clone())));
                    }
                    return;
                }
                // The commit was sent and its answer lost: whether it took
                // effect is unknown, and each caller is told so (not that
                // nothing was written); do not retry.
                Err(Failed::Commit(e)) => {
                    tracing::error!(error = %e, writes = batch.len(), "group commit unanswered; outcome unknown");
                    for job in batch {
                        let unknown = brain_core::DomainError::outcome_unknown();
                        let _ = job.reply.send(Err(StoreError::Domain(unknown)));
                    }
                    return;
                }
                // Rolled back: nothing of the batch was written.
                Err(Failed::Statement) => {
                    self.rolled_back.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        for job in batch.drain(..) {
            let rows = alone(warm, &job.build).await;
            let _ = job.reply.send(rows);
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Vec<Job>>> {
        // Jobs are only moved under the lock; a poisoned map is still whole.
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Removes its tenant's queue if the leader ends without emptying it; the
/// queued callers then hear an error instead of waiting forever.
struct Leading {
    groups: Arc<Groups>,
    tenant: String,
    done: bool,
}

impl Drop for Leading {
    fn drop(&mut self) {
        if !self.done {
            self.groups.lock().remove(&self.tenant);
        }
    }
}

enum Failed {
    /// The transaction could not begin (no connection in time).
    Begin(String),
    /// Its connection was found dead as it began: nothing ran.
    Lost(String),
    /// A statement failed: rolled back, nothing written.
    Statement,
    /// The commit's answer was lost with its connection: whether it took
    /// effect is unknown. The driver's words, for the server's log.
    Commit(String),
}

/// One write in its own statement's transaction. A connection that answered
/// has nothing open and is kept for the next write; one that failed goes
/// back to sqlx.
pub(crate) async fn alone(warm: &Warm, build: &Build) -> Answer {
    let mut held = warm.take().await.map_err(db)?;
    // Its own statement's transaction: the answer is the commit's.
    let rows = build()
        .fetch_all(held.conn())
        .await
        .map_err(brain_store_sqlx::committing)?;
    warm.give(held);
    Ok(rows)
}

impl Failed {
    /// Taking a connection or beginning on it failed; a broken connection
    /// is remembered (brain_store_sqlx::lost) and may be begun again.
    fn began(e: &sqlx::Error) -> Self {
        brain_store_sqlx::lost::note(e);
        if brain_store_sqlx::lost::breaks_connection(e) {
            Failed::Lost(e.to_string())
        } else {
            Failed::Begin(e.to_string())
        }
    }
}

async fn together(warm: &Warm, batch: &[Job]) -> Result<Vec<Vec<PgRow>>, Failed> {
    let done = match together_once(warm, batch).await {
        // The batch's BEGIN met a dead connection (a restart, a failover):
        // nothing of it ran, so it begins again on another.
        Err(Failed::Lost(_)) => together_once(warm, batch).await,
        done => done,
    };
    done.map_err(|e| match e {
        Failed::Lost(e) => Failed::Begin(e),
        other => other,
    })
}

async fn together_once(warm: &Warm, batch: &[Job]) -> Result<Vec<Vec<PgRow>>, Failed> {
    let mut held = warm.take().await.map_err(|e| Failed::began(&e))?;
    let answers = together_on(held.conn(), batch).await?;
    // Committed: nothing open on it.
    warm.give(held);
    Ok(answers)
}

async fn together_on(
    conn: &mut sqlx::PgConnection,
    batch: &[Job],
) -> Result<Vec<Vec<PgRow>>, Failed> {
    let mut tx = sqlx::Connection::begin(conn)
        .await
        .map_err(|e| Failed::began(&e))?;
    let mut answers = Vec::with_capacity(batch.len());
    for job in batch {
        match (job.build)().fetch_all(&mut *tx).await {
            Ok(rows) => answers.push(rows),
            Err(e) => {
                brain_store_sqlx::lost::note(&e);
                let _ = tx.rollback().await;
                return Err(Failed::Statement);
            }
        }
    }
    tx.commit().await.map_err(|e| {
        brain_store_sqlx::lost::note(&e);
        // The database answered the COMMIT with an error: it rolled the
        // transaction back, and the writes are retried one by one as after a
        // failed statement. Only a COMMIT whose answer never came is unknown.
        if brain_store_sqlx::lost::breaks_connection(&e) {
            Failed::Commit(e.to_string())
        } else {
            Failed::Statement
        }
    })?;
    Ok(answers)
}
