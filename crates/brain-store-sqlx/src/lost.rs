//! When this process last saw a database connection break: a restart, a
//! failover, a backend killed by an operator. Pools skip the ping before
//! each acquire (a round trip per call, issue 11), so a connection that died
//! while it sat idle is only found out when it is used. Once one breaking
//! error has been seen, every connection that sat idle across it is pinged
//! before it is handed out (`brain-store-postgres`'s pool), and a write's
//! `BEGIN` that met a dead connection is sent again on another: after a
//! restart one request fails at most, not one per pooled connection.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Microseconds after [`epoch`] of the last break seen, plus one; 0 = none.
static LAST: AtomicU64 = AtomicU64::new(0);

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Whether `e` says the connection itself is gone (its socket, or the
/// server ending it), not that a statement failed.
pub fn breaks_connection(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed => true,
        // SQLSTATE class 08 (connection exception); 57P01-57P05: the server
        // is shutting down, crashed, not yet accepting connections, lost the
        // database, or ended an idle session (idle_session_timeout). Each
        // ends the session (FATAL); 57014, a cancelled statement, does not.
        sqlx::Error::Database(d) => d
            .code()
            .is_some_and(|c| c.starts_with("08") || c.starts_with("57P")),
        _ => false,
    }
}

/// Record `e` if it broke its connection.
pub fn note(e: &sqlx::Error) {
    if breaks_connection(e) {
        let at = epoch().elapsed().as_micros();
        LAST.fetch_max(
            u64::try_from(at).unwrap_or(u64::MAX - 1) + 1,
            Ordering::SeqCst,
        );
    }
}

/// Whether a break was seen at or after `since`: a connection idle since
/// then may be dead.
pub fn seen_since(since: Instant) -> bool {
    match LAST.load(Ordering::SeqCst) {
        0 => false,
        last => epoch() + Duration::from_micros(last - 1) >= since,
    }
}

/// Whether a break was seen within the last `idle` (how long a pooled
/// connection has sat unused).
pub fn seen_within(idle: Duration) -> bool {
    match Instant::now().checked_sub(idle) {
        Some(since) => seen_since(since),
        None => LAST.load(Ordering::SeqCst) != 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_breaking_errors_count_and_only_from_then_on() {
        let before = Instant::now();
        note(&sqlx::Error::RowNotFound);
        assert!(!seen_since(before), "a statement's error is no break");
        std::thread::sleep(Duration::from_millis(2));
        let idle_from = Instant::now();
        note(&sqlx::Error::Io(std::io::ErrorKind::BrokenPipe.into()));
        assert!(seen_since(idle_from), "idle across the break");
        assert!(seen_within(Duration::from_secs(3600)));
        std::thread::sleep(Duration::from_millis(2));
        assert!(!seen_since(Instant::now()), "returned after the break");
    }
}
