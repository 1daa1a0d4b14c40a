//! Write connections kept between writes, out of sqlx's pool.
//!
//! sqlx 0.8 pings every connection that goes back to its pool (a `Sync` and
//! its answer, whatever the pool's options), so each write paid one more
//! round trip after its answer: two per start+end pair, each waking a
//! PostgreSQL backend and a brain task. A write whose connection finished
//! cleanly (its statement answered, no transaction open) leaves it here
//! instead, for the next write to take. Anything else (an error, a call
//! dropped mid-statement, a transaction left open) goes back to sqlx as
//! before, which rolls back or closes it.
//!
//! Kept connections stay checked out of sqlx's pool, where reads (and a
//! project's first write) acquire theirs. So a connection is kept only while
//! sqlx still has an idle connection or room to open one (that check is
//! what protects readers; at most half the pool is kept besides), and none
//! stays unused for longer than about twice [`MAX_IDLE`] (while anything is
//! kept the sweep runs every `MAX_IDLE`; with nothing kept it sleeps): a reader that finds sqlx's pool busy waits for a connection
//! kept here at most that long. A connection is kept at most [`MAX_KEPT`]
//! after it left sqlx, so it may outlive sqlx's own `max_lifetime` by that
//! much before sqlx's rules apply to it again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sqlx::pool::PoolConnection;
use sqlx::postgres::PgPool;
use sqlx::{PgConnection, Postgres};

/// How long a connection may go from write to write before sqlx sees it again.
const MAX_KEPT: Duration = Duration::from_secs(300);
/// How long a connection is kept unused before it goes back to sqlx.
const MAX_IDLE: Duration = Duration::from_millis(50);

pub(crate) struct Warm {
    pool: PgPool,
    idle: Mutex<Vec<Held>>,
    /// Set when the store closes: nothing more is kept (sqlx's close waits
    /// for every checked-out connection).
    closing: AtomicBool,
    /// At most this many kept at once.
    cap: usize,
    /// Wakes the sweep when a connection is kept (or the store goes): with
    /// nothing kept it sleeps instead of ticking.
    kept: Arc<tokio::sync::Notify>,
}

/// A connection taken for a write, with when it left sqlx's pool and when
/// it was last kept.
pub(crate) struct Held {
    conn: PoolConnection<Postgres>,
    since: Instant,
    kept_at: Instant,
}

impl Held {
    pub(crate) fn conn(&mut self) -> &mut PgConnection {
        &mut self.conn
    }

    /// Back to sqlx's pool, which pings it or rolls back what is open.
    pub(crate) fn into_pooled(self) -> PoolConnection<Postgres> {
        self.conn
    }
}

impl Warm {
    pub(crate) fn new(pool: PgPool) -> Arc<Self> {
        // Half the pool: the rest stays sqlx's, for reads.
        let cap = (pool.options().get_max_connections() as usize / 2).max(1);
        let warm = Arc::new(Self {
            pool,
            idle: Mutex::new(Vec::new()),
            closing: AtomicBool::new(false),
            cap,
            kept: Arc::default(),
        });
        // Outside a runtime (never in brain) nothing is kept: see `give`.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(return_unused(Arc::downgrade(&warm), warm.kept.clone()));
        } else {
            warm.closing.store(true, Ordering::Release);
        }
        warm
    }

    /// The most recently kept connection, or one from sqlx's pool.
    pub(crate) async fn take(&self) -> Result<Held, sqlx::Error> {
        loop {
            let kept = self.lock().pop();
            match kept {
                Some(h)
                    if h.since.elapsed() < MAX_KEPT
                        && !brain_store_sqlx::lost::seen_since(h.kept_at) =>
                {
                    return Ok(h);
                }
                // Too old, or kept across a broken connection (it may be
                // dead too): back to sqlx, which applies its lifetime rules
                // and pings it.
                Some(h) => drop(h.conn),
                None => break,
            }
        }
        let now = Instant::now();
        Ok(Held {
            conn: self.pool.acquire().await?,
            since: now,
            kept_at: now,
        })
    }

    /// A connection whose last statement answered and which has no
    /// transaction open: kept for the next write, or returned to sqlx.
    pub(crate) fn give(&self, mut held: Held) {
        let sqlx_can_serve = self.pool.num_idle() > 0
            || self.pool.size() < self.pool.options().get_max_connections();
        if sqlx_can_serve && held.since.elapsed() < MAX_KEPT {
            let mut idle = self.lock();
            // Read under the lock `drain` takes, so nothing is kept after it.
            if idle.len() < self.cap && !self.closing.load(Ordering::Acquire) {
                held.kept_at = Instant::now();
                idle.push(held);
                self.kept.notify_one();
                return;
            }
        }
        drop(held.conn);
    }

    /// Keep nothing more, and return what is kept to sqlx (before its close).
    pub(crate) fn drain(&self) {
        let kept = {
            let mut idle = self.lock();
            self.closing.store(true, Ordering::Release);
            std::mem::take(&mut *idle)
        };
        drop(kept);
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Held>> {
        // Connections are only pushed and popped whole; a poisoned stack is
        // still consistent.
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Warm {
    /// A pooled connection returns itself to sqlx from a task, which needs a
    /// runtime; without one (a store dropped after its runtime), close the
    /// kept sockets instead.
    fn drop(&mut self) {
        // The sweep wakes, finds the store gone, and ends.
        self.kept.notify_one();
        if tokio::runtime::Handle::try_current().is_err() {
            let idle = self.idle.get_mut().unwrap_or_else(|e| e.into_inner());
            for held in idle.drain(..) {
                drop(held.conn.detach());
            }
        }
    }
}

/// While anything is kept, every [`MAX_IDLE`] return to sqlx what no write
/// took in that time; with nothing kept, wait until something is. Ends with
/// the store (its drop wakes this).
async fn return_unused(warm: std::sync::Weak<Warm>, kept: Arc<tokio::sync::Notify>) {
    loop {
        kept.notified().await;
        loop {
            tokio::time::sleep(MAX_IDLE).await;
            let Some(warm) = warm.upgrade() else {
                return;
            };
            let (unused, left): (Vec<Held>, usize) = {
                let mut idle = warm.lock();
                let (keep, unused) = std::mem::take(&mut *idle)
                    .into_iter()
                    .partition(|h| h.kept_at.elapsed() < MAX_IDLE);
                *idle = keep;
                (unused, idle.len())
            };
            drop(unused);
            if left == 0 {
                break;
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use sqlx::postgres::PgPoolOptions;

    /// A pool of at most `max` connections on a fresh test database (kept
    /// alive by the first half).
    async fn pool(max: u32) -> (brain_testkit::TestDb, PgPool) {
        let db = brain_testkit::TestDb::create()
            .await
            .expect("test database");
        let pool = PgPoolOptions::new()
            .max_connections(max)
            .connect(&db.url)
            .await
            .unwrap();
        (db, pool)
    }

    /// The next write takes the connection the last one left (the same
    /// backend: no release ping, no new connection), and finds nothing of
    /// that write on it: no transaction open, no tenant scope.
    #[tokio::test]
    async fn the_next_write_takes_the_kept_connection_clean() {
        let (_db, pool) = pool(4).await;
        let warm = Warm::new(pool);
        let mut held = warm.take().await.unwrap();
        let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(held.conn())
            .await
            .unwrap();
        sqlx::raw_sql("BEGIN; SELECT set_config('brain.tenant', 'acme', true); COMMIT")
            .execute(held.conn())
            .await
            .unwrap();
        warm.give(held);
        assert_eq!(warm.lock().len(), 1, "kept, not returned to sqlx");
        let mut again = warm.take().await.unwrap();
        assert!(warm.lock().is_empty());
        let (pid_again, tenant): (i32, Option<String>) =
            sqlx::query_as("SELECT pg_backend_pid(), current_setting('brain.tenant', true)")
                .fetch_one(again.conn())
                .await
                .unwrap();
        assert_eq!(pid_again, pid, "the kept connection is taken again");
        assert_eq!(tenant.unwrap_or_default(), "", "no tenant scope left on it");
        // SAVEPOINT works only inside a transaction block.
        let savepoint = sqlx::query("SAVEPOINT probe").execute(again.conn()).await;
        assert!(savepoint.is_err(), "no transaction open on it");
        warm.drain();
        warm.give(again);
        assert!(warm.lock().is_empty(), "nothing is kept once drained");
    }

    /// A kept connection that no write takes goes back to sqlx within about
    /// twice MAX_IDLE, though the sweep slept until it was kept.
    #[tokio::test]
    async fn an_unused_kept_connection_goes_back_to_sqlx() {
        let (_db, pool) = pool(4).await;
        let warm = Warm::new(pool.clone());
        tokio::time::sleep(MAX_IDLE * 2).await;
        let held = warm.take().await.unwrap();
        warm.give(held);
        assert_eq!(warm.lock().len(), 1);
        let idle_before = pool.num_idle();
        tokio::time::sleep(MAX_IDLE * 3).await;
        assert!(warm.lock().is_empty(), "still kept after 3 x MAX_IDLE");
        assert_eq!(pool.num_idle(), idle_before + 1, "back in sqlx's pool");
    }

    /// The sweep sleeps while nothing is kept, and still ends with the store.
    #[tokio::test]
    async fn the_sweep_ends_with_the_store() {
        let (_db, pool) = pool(2).await;
        let warm = Warm::new(pool);
        let kept = warm.kept.clone();
        tokio::task::yield_now().await;
        assert_eq!(Arc::strong_count(&kept), 3, "this, the store and its sweep");
        drop(warm);
        for _ in 0..100 {
            if Arc::strong_count(&kept) == 1 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the sweep still runs after the store was dropped");
    }
}
