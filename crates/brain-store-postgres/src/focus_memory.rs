//! What this replica's memory of focus reads ([`FocusCache`]) needs from
//! PostgreSQL: a LISTEN connection that hears every focus change a replica
//! may remember (migration 0010's trigger; since 0029 only the updates of
//! rows marked watched, `brain_focus_watch`, and since 0031 while the mark
//! lasts) and this replica's fence markers, and a connection that sends the
//! markers. The same LISTEN connection also hears the applied
//! ends and relays that resource subscribers are told of (`brain_focus`,
//! [`crate::resources`]), so a replica holds one LISTEN connection, not two.
//!
//! A fence marker is a NOTIFY on `brain_fence_<replica id>` with the id and
//! a number. PostgreSQL delivers notifications in commit order, so once the
//! listener has heard marker `n`, it has heard every change committed before
//! marker `n` was sent. A read asks for the next number not yet sent; the
//! sender sends one marker for every read waiting at the time.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use brain_core::feed::FocusListener;
use brain_core::focus_cache::{Fence, FocusCache};
use sqlx::postgres::{PgConnectOptions, PgListener, PgPool};
use sqlx::{Connection, PgConnection};
use tokio::sync::{Notify, watch};

const CHANGED: &str = "brain_focus_changed";
/// Each replica's markers go on a channel of its own (this and its id), so
/// a replica's listener is not sent every other replica's markers.
const FENCE: &str = "brain_fence_";
/// A read waits this long for its marker, then reads the database.
const FENCE_LIMIT: Duration = Duration::from_secs(2);
const RETRY: Duration = Duration::from_secs(1);
/// After this many reads in a row waited out [`FENCE_LIMIT`], the listener's
/// connection is taken for dead (a black-holed socket never errors) and
/// replaced.
const TIMEOUTS_BEFORE_RELISTEN: u32 = 3;

/// The memory, and who else hears what its listener hears.
#[derive(Clone)]
pub(crate) struct FocusMemory {
    pub(crate) cache: Arc<FocusCache>,
    subscribers: Subscribers,
    fence: Arc<PgFence>,
}

type Subscribers = Arc<std::sync::Mutex<Vec<FocusListener>>>;

impl FocusMemory {
    /// Reads that waited out their fence instead of hearing their marker.
    pub(crate) fn fences_waited_out(&self) -> u64 {
        self.fence.waited_out.load(Ordering::Relaxed)
    }

    /// Tell `listener` of every change announced on `brain_focus` from now
    /// on; answers once the listener listens (or after 5 s: it keeps trying).
    pub(crate) async fn subscribe(&self, listener: FocusListener) {
        self.subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(listener);
        let mut heard = self.fence.heard.subscribe();
        let _ = tokio::time::timeout(Duration::from_secs(5), heard.wait_for(|h| h.listening)).await;
    }
}

/// Start the listener and the marker sender on `pool`'s database; the memory
/// they keep right.
pub(crate) fn start(pool: &PgPool) -> FocusMemory {
    let replica = uuid::Uuid::new_v4().simple().to_string();
    let fence = Arc::new(PgFence {
        channel: format!("{FENCE}{replica}"),
        replica,
        sent: AtomicU64::new(0),
        wanted: AtomicU64::new(0),
        kick: Notify::new(),
        heard: watch::Sender::new(Heard::default()),
        timeouts: AtomicU32::new(0),
        waited_out: AtomicU64::new(0),
        relisten: watch::Sender::new(0),
    });
    let cache = Arc::new(FocusCache::new(fence.clone()));
    let subscribers = Subscribers::default();
    tokio::spawn(listen(
        pool.clone(),
        fence.clone(),
        cache.clone(),
        subscribers.clone(),
    ));
    tokio::spawn(send_markers(pool.clone(), fence.clone()));
    FocusMemory {
        cache,
        subscribers,
        fence,
    }
}

struct PgFence {
    replica: String,
    /// Where this replica's markers go.
    channel: String,
    /// The highest marker number the sender has begun to send.
    sent: AtomicU64,
    /// The highest marker number a read waits for.
    wanted: AtomicU64,
    kick: Notify,
    heard: watch::Sender<Heard>,
    /// Reads in a row whose marker was not heard in time.
    timeouts: AtomicU32,
    /// Reads whose marker was not heard in time, ever (for tests: a read
    /// answered after waiting out its fence, not by a marker).
    waited_out: AtomicU64,
    /// Bumped to make the listener drop its connection and listen anew.
    relisten: watch::Sender<u64>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Heard {
    /// The highest of this replica's markers heard.
    marker: u64,
    /// Bumped whenever a marker may have been lost: a read waiting across it
    /// goes to the database.
    resets: u64,
    listening: bool,
    sending: bool,
}

#[async_trait]
impl Fence for PgFence {
    async fn pass(&self) -> bool {
        let mut heard = self.heard.subscribe();
        let start = *heard.borrow_and_update();
        if !(start.listening && start.sending) {
            return false;
        }
        // Any marker numbered above what the sender has begun is sent after
        // this read began.
        let want = self.sent.load(Ordering::SeqCst) + 1;
        self.wanted.fetch_max(want, Ordering::SeqCst);
        self.kick.notify_one();
        let waited = tokio::time::timeout(
            FENCE_LIMIT,
            heard.wait_for(|h| h.marker >= want || h.resets != start.resets),
        )
        .await;
        if waited.is_err() {
            self.waited_out.fetch_add(1, Ordering::Relaxed);
            if self.timeouts.fetch_add(1, Ordering::SeqCst) + 1 >= TIMEOUTS_BEFORE_RELISTEN {
                self.timeouts.store(0, Ordering::SeqCst);
                self.relisten.send_modify(|n| *n += 1);
            }
        } else {
            self.timeouts.store(0, Ordering::SeqCst);
        }
        matches!(waited, Ok(Ok(h)) if h.marker >= want && h.resets == start.resets)
    }
}

impl PgFence {
    fn set(&self, f: impl FnOnce(&mut Heard)) {
        self.heard.send_modify(f);
    }
}

/// Send a marker whenever a read waits for one not yet sent, until the
/// pool closes.
async fn send_markers(pool: PgPool, fence: Arc<PgFence>) {
    let mut closed = pool.close_event();
    closed
        .do_until(send_markers_on(pool.connect_options(), &fence))
        .await
        .ok();
}

async fn send_markers_on(options: Arc<PgConnectOptions>, fence: &PgFence) {
    loop {
        let mut conn = match marker_connection(&options).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "focus fence cannot connect; reads go to the database");
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        fence.set(|h| h.sending = true);
        loop {
            while fence.wanted.load(Ordering::SeqCst) <= fence.sent.load(Ordering::SeqCst) {
                fence.kick.notified().await;
            }
            // Let the reads already woken with this one ask first: each that
            // does before the number is taken below waits for this marker,
            // not the next one, so a burst of reads shares one round trip.
            tokio::task::yield_now().await;
            let n = fence.sent.fetch_add(1, Ordering::SeqCst) + 1;
            metrics::counter!("brain_focus_fence_markers_total").increment(1);
            let notify = sqlx::query("SELECT pg_notify($1, $2)")
                .bind(&fence.channel)
                .bind(format!("{}:{n}", fence.replica))
                .execute(&mut conn);
            // A socket that stops answering never errors: give up on it.
            let sent = match tokio::time::timeout(FENCE_LIMIT, notify).await {
                Ok(sent) => sent.map(drop).map_err(|e| e.to_string()),
                Err(_) => Err(format!("no answer in {FENCE_LIMIT:?}")),
            };
            if let Err(e) = sent {
                tracing::warn!(error = %e, "focus fence lost its connection; reconnecting");
                fence.set(|h| {
                    h.sending = false;
                    h.resets += 1;
                });
                break;
            }
        }
    }
}

/// A marker carries nothing worth a disk flush: its commit does not wait for one.
async fn marker_connection(options: &PgConnectOptions) -> Result<PgConnection, sqlx::Error> {
    let mut conn = PgConnection::connect_with(options).await?;
    sqlx::query("SET synchronous_commit = off")
        .execute(&mut conn)
        .await?;
    Ok(conn)
}

/// Hear every focus change and this replica's markers, in commit order.
async fn listen(
    pool: PgPool,
    fence: Arc<PgFence>,
    cache: Arc<FocusCache>,
    subscribers: Subscribers,
) {
    loop {
        let mut pg = match listener(&pool, &fence.channel).await {
            Ok(pg) => pg,
            Err(sqlx::Error::PoolClosed) => return,
            Err(e) => {
                tracing::warn!(error = %e, "focus memory cannot listen; reads go to the database");
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        // Listening from here on: what was committed before is in any
        // database answer read from now, and what commits after is heard.
        cache.forget_all();
        fence.set(|h| {
            h.listening = true;
            h.resets += 1;
        });
        let mut relisten = fence.relisten.subscribe();
        relisten.mark_unchanged();
        loop {
            let got = tokio::select! {
                got = pg.try_recv() => got,
                _ = relisten.changed() => {
                    tracing::warn!("focus memory heard no marker for a while; listening again");
                    cache.forget_all();
                    fence.set(|h| {
                        h.listening = false;
                        h.resets += 1;
                    });
                    break;
                }
            };
            match got {
                Ok(Some(n)) => match n.channel() {
                    CHANGED => changed(&cache, n.payload()),
                    crate::resources::CHANNEL => tell(&subscribers, n.payload()),
                    c if c == fence.channel => {
                        let sent = fence.sent.load(Ordering::SeqCst);
                        if let Some(m) = marker(&fence.replica, n.payload(), sent) {
                            fence.set(|h| h.marker = h.marker.max(m));
                        }
                    }
                    _ => {}
                },
                // The connection was lost and sqlx listens again on a new
                // one; what was committed between went unheard.
                Ok(None) => {
                    cache.forget_all();
                    fence.set(|h| h.resets += 1);
                }
                Err(e) => {
                    cache.forget_all();
                    fence.set(|h| {
                        h.listening = false;
                        h.resets += 1;
                    });
                    if matches!(e, sqlx::Error::PoolClosed) {
                        return;
                    }
                    tracing::warn!(error = %e, "focus memory lost its listener; listening again");
                    break;
                }
            }
        }
    }
}

async fn listener(pool: &PgPool, fence_channel: &str) -> Result<PgListener, sqlx::Error> {
    let mut pg = PgListener::connect_with(pool).await?;
    pg.listen_all([CHANGED, fence_channel, crate::resources::CHANNEL])
        .await?;
    Ok(pg)
}

/// Hand an applied end's or relay's change to the resource subscribers.
fn tell(subscribers: &Subscribers, payload: &str) {
    let Some(change) = crate::resources::heard(payload) else {
        return;
    };
    let listeners = subscribers
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    for listener in listeners {
        listener(change.clone());
    }
}

/// Forget the project a change names; an unreadable one forgets everything.
fn changed(cache: &FocusCache, payload: &str) {
    match serde_json::from_str::<Vec<String>>(payload).as_deref() {
        Ok([tenant, project]) => cache.forget(tenant, project),
        _ => cache.forget_all(),
    }
}

/// The number of one of `replica`'s markers. Anyone who can connect to the
/// database can NOTIFY, so a number this replica has not begun to send is
/// not believed: a forged high one would otherwise pass every later read.
fn marker(replica: &str, payload: &str, sent: u64) -> Option<u64> {
    let (from, n) = payload.split_once(':')?;
    if from != replica {
        return None;
    }
    n.parse().ok().filter(|&n| n <= sent)
}

#[cfg(test)]
mod tests {
    use super::marker;

    #[test]
    fn only_markers_this_replica_sent_count() {
        assert_eq!(marker("r1", "r1:3", 5), Some(3));
        assert_eq!(marker("r1", "r1:5", 5), Some(5));
        assert_eq!(marker("r1", "r1:6", 5), None);
        assert_eq!(marker("r1", "r1:18446744073709551615", 5), None);
        assert_eq!(marker("r1", "r2:3", 5), None);
        assert_eq!(marker("r1", "r1:x", 5), None);
        assert_eq!(marker("r1", "r1", 5), None);
    }
}
