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
//! project's first write) acquire theirs. So at most half the pool is kept,
//! only while sqlx still has an idle connection or room to open one, and
//! none for longer than [`MAX_IDLE`] without a write taking it: a reader
//! that finds sqlx's pool busy waits for a connection kept here at most
//! that long. A
//! connection is kept at most [`MAX_KEPT`] after it left sqlx, so sqlx's own
//! lifetime rules still apply to it in turn.

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
        });
        // Outside a runtime (never in brain) nothing is kept: see `give`.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(return_unused(Arc::downgrade(&warm)));
        } else {
            warm.closing.store(true, Ordering::Release);
        }
        warm
    }

    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The most recently kept connection, or one from sqlx's pool.
    pub(crate) async fn take(&self) -> Result<Held, sqlx::Error> {
        loop {
            let kept = self.lock().pop();
            match kept {
                Some(h) if h.since.elapsed() < MAX_KEPT => return Ok(h),
                // Too old: back to sqlx, which applies its lifetime rules.
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
        if sqlx_can_serve
            && held.since.elapsed() < MAX_KEPT
            && !self.closing.load(Ordering::Acquire)
        {
            let mut idle = self.lock();
            if idle.len() < self.cap {
                held.kept_at = Instant::now();
                idle.push(held);
                return;
            }
        }
        drop(held.conn);
    }

    /// Keep nothing more, and return what is kept to sqlx (before its close).
    pub(crate) fn drain(&self) {
        self.closing.store(true, Ordering::Release);
        let kept = std::mem::take(&mut *self.lock());
        drop(kept);
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Held>> {
        // Connections are only pushed and popped whole; a poisoned stack is
        // still consistent.
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Every [`MAX_IDLE`], return to sqlx what no write took in that time; ends
/// with the store.
async fn return_unused(warm: std::sync::Weak<Warm>) {
    let mut tick = tokio::time::interval(MAX_IDLE);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(warm) = warm.upgrade() else {
            return;
        };
        let unused: Vec<Held> = {
            let mut idle = warm.lock();
            let (keep, unused) = std::mem::take(&mut *idle)
                .into_iter()
                .partition(|h| h.kept_at.elapsed() < MAX_IDLE);
            *idle = keep;
            unused
        };
        drop(unused);
    }
}
