//! Group commit for SQLite's one writer.
//!
//! With `synchronous = FULL` every commit waits for an fsync of the WAL, and
//! SQLite runs one write transaction at a time, so writers that queue behind
//! each other paid one fsync each and c = 8 was no faster than c = 1. Here a
//! writer that finds the write transaction open joins it in a savepoint of
//! its own; when it is done and another writer waits, it leaves the
//! transaction open for that one, and the last of the batch commits for all.
//! Nobody hears of success before that commit: every member's write is
//! durable when its caller is answered, and a member that fails or drops
//! rolls back its savepoint only. A member that wrote nothing but answers
//! from what it read (a replay, a dry run) may have read earlier members'
//! uncommitted writes, so it too waits for their commit (`finish_read`). A batch that cannot be committed answers
//! every member with an error and writes nothing, so no call is half-applied.
//!
//! Each step that moves the transaction (begin, settle, commit) runs in a
//! task of its own: a caller that goes away mid-step cannot leave the one
//! connection in a state the flags do not describe.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use brain_core::error::StoreError;
use sqlx::ConnectOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use tokio::sync::{Mutex, OwnedMutexGuard, oneshot};

use crate::db;

/// At most this many writes share one commit, so a steady queue still commits.
const MAX_BATCH: usize = 64;

/// A member waiting for its batch's commit takes the commit on itself after
/// this long: the writer it left the batch open for went away before joining.
const RESCUE_AFTER: Duration = Duration::from_millis(20);

/// The one write connection and the batch open on it.
pub(crate) struct Writer {
    conn: Arc<Mutex<Batch>>,
    /// Writers waiting for the connection: a member that finds one leaves the
    /// batch open for it.
    waiting: Arc<AtomicUsize>,
}

mod failed;
use failed::{Failed, Outcome, commit_may_have_written};

struct Batch {
    conn: SqliteConnection,
    /// A transaction is open on `conn`.
    open: bool,
    /// Counts batches, so a waiting member can tell whether its own is still open.
    generation: u64,
    /// A member's savepoint is open (a member went away without settling).
    savepoint: bool,
    /// The batch's first member writes in the transaction itself, not in a
    /// savepoint (undoing it is a rollback), so a lone write costs what a
    /// plain transaction does.
    bare: bool,
    /// Members whose writes are in the open transaction.
    joined: usize,
    /// Those of them waiting to hear how the commit went.
    waiters: Vec<oneshot::Sender<Outcome>>,
    /// A savepoint could not be undone: the batch must not commit.
    poisoned: bool,
}

/// One write inside the open batch: its statements run on the writer
/// connection inside its savepoint. Dropped without [`Member::commit`], its
/// savepoint is rolled back and nothing it wrote stays.
pub(crate) struct Member {
    guard: Option<OwnedMutexGuard<Batch>>,
    batch: Arc<Mutex<Batch>>,
    waiting: Arc<AtomicUsize>,
}

/// Counts a writer as waiting until it holds the connection (or gives up).
struct Waiting(Arc<AtomicUsize>);

impl Waiting {
    fn new(n: &Arc<AtomicUsize>) -> Self {
        n.fetch_add(1, Ordering::SeqCst);
        Self(n.clone())
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn exec(conn: &mut SqliteConnection, sql: &str) -> Result<(), sqlx::Error> {
    sqlx::query(sql).execute(conn).await.map(|_| ())
}

impl Batch {
    /// Undo the writes of a member that went away without settling.
    async fn clean(&mut self) {
        if self.bare {
            self.bare = false;
            self.rollback().await;
        }
        if self.savepoint {
            self.savepoint = false;
            let undone = async {
                exec(&mut self.conn, "ROLLBACK TO member").await?;
                exec(&mut self.conn, "RELEASE member").await
            }
            .await;
            if let Err(e) = undone {
                tracing::error!(error = %e, "could not undo a dropped write's savepoint");
                self.poisoned = true;
            }
        }
    }

    /// Roll the whole transaction back (its only member is undone).
    async fn rollback(&mut self) {
        if let Err(e) = exec(&mut self.conn, "ROLLBACK").await {
            tracing::error!(error = %e, "rolling back a write batch failed");
        }
        self.open = false;
        self.poisoned = false;
        self.joined = 0;
    }

    /// End the open transaction: commit what its members wrote, or roll it
    /// back when none kept anything or it is poisoned; tell the members.
    async fn finish(&mut self) -> Outcome {
        self.clean().await;
        if !self.open {
            return Ok(());
        }
        let outcome = if self.poisoned {
            Err(Failed::Nothing(
                "the write could not be applied; nothing was written, retry".to_owned(),
            ))
        } else if self.joined == 0 {
            Ok(())
        } else {
            exec(&mut self.conn, "COMMIT").await.map_err(|e| {
                if commit_may_have_written(&e) {
                    tracing::error!(error = %e, "group commit failed in its I/O; outcome unknown");
                    Failed::Unknown
                } else {
                    tracing::error!(error = %e, "group commit failed");
                    Failed::Nothing(
                        "the write could not be committed; nothing was written, retry".to_owned(),
                    )
                }
            })
        };
        if self.joined > 0 && outcome.is_ok() {
            metrics::histogram!("brain_sqlite_writes_per_commit").record(self.joined as f64);
            self.open = false;
            self.joined = 0;
        } else {
            self.rollback().await;
        }
        for w in self.waiters.drain(..) {
            let _ = w.send(outcome.clone());
        }
        outcome
    }
}

/// Where a settled member stands: done, or waiting for its batch's commit.
enum Settled {
    Done(Outcome),
    Pending(oneshot::Receiver<Outcome>, u64),
}

/// How a member leaves the batch.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Leave {
    /// Its writes stay; it is answered after the commit.
    Keep,
    /// Its writes are undone and it waits for nothing (dropped).
    Undo,
    /// Its writes are undone, but its answer rests on what it read, which
    /// may be earlier members' uncommitted writes: it is answered after the
    /// batch commits (a replay, a dry run).
    UndoAndWait,
}

/// Close a member's savepoint (keeping or undoing its writes), then commit
/// the batch unless another writer waits to join it.
async fn settle(mut g: OwnedMutexGuard<Batch>, waiting: Arc<AtomicUsize>, leave: Leave) -> Settled {
    let keep = leave == Leave::Keep;
    if g.bare && !keep {
        // The first member is all the transaction holds: it read nothing
        // uncommitted.
        g.bare = false;
        g.rollback().await;
        return Settled::Done(Ok(()));
    }
    let closed = if std::mem::take(&mut g.bare) {
        Ok(())
    } else if keep {
        exec(&mut g.conn, "RELEASE member").await
    } else {
        match exec(&mut g.conn, "ROLLBACK TO member").await {
            Ok(()) => exec(&mut g.conn, "RELEASE member").await,
            Err(e) => Err(e),
        }
    };
    g.savepoint = false;
    if let Err(e) = closed {
        tracing::error!(error = %e, "closing a write's savepoint failed");
        g.poisoned = true;
    }
    if keep && !g.poisoned {
        g.joined += 1;
    }
    if leave == Leave::UndoAndWait && g.joined == 0 && !g.poisoned {
        return Settled::Done(Ok(()));
    }
    let more = waiting.load(Ordering::SeqCst) > 0 && g.joined < MAX_BATCH && !g.poisoned;
    if more {
        if leave == Leave::Undo {
            return Settled::Done(Ok(()));
        }
        let (tx, rx) = oneshot::channel();
        g.waiters.push(tx);
        return Settled::Pending(rx, g.generation);
    }
    let outcome = g.finish().await;
    Settled::Done(if leave == Leave::Undo {
        Ok(())
    } else {
        outcome
    })
}

impl Writer {
    pub(crate) async fn open(options: &SqliteConnectOptions) -> Result<Self, StoreError> {
        let conn = options.connect().await.map_err(db)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(Batch {
                conn,
                open: false,
                generation: 0,
                savepoint: false,
                bare: false,
                joined: 0,
                waiters: Vec::new(),
                poisoned: false,
            })),
            waiting: Arc::default(),
        })
    }

    /// Join the open write transaction, or open one holding the write lock
    /// from its first statement (`BEGIN IMMEDIATE`).
    pub(crate) async fn begin(&self) -> Result<Member, StoreError> {
        let conn = self.conn.clone();
        let waiting = self.waiting.clone();
        let started = tokio::spawn(async move {
            let queued = Waiting::new(&waiting);
            let mut g = conn.clone().lock_owned().await;
            drop(queued);
            g.clean().await;
            if g.poisoned {
                let _ = g.finish().await;
            }
            if !g.open {
                if let Err(e) = exec(&mut g.conn, "BEGIN IMMEDIATE").await {
                    // A transaction the flags lost (a ROLLBACK that failed)
                    // would refuse every BEGIN from now on: end it, once.
                    if exec(&mut g.conn, "ROLLBACK").await.is_err() {
                        return Err(db(e));
                    }
                    exec(&mut g.conn, "BEGIN IMMEDIATE").await.map_err(db)?;
                }
                g.open = true;
                g.generation += 1;
                g.bare = true;
            } else if let Err(e) = exec(&mut g.conn, "SAVEPOINT member").await {
                // Those already in the batch are not left waiting for a
                // writer that will not come.
                let _ = g.finish().await;
                return Err(db(e));
            } else {
                g.savepoint = true;
            }
            Ok(Member {
                guard: Some(g),
                batch: conn,
                waiting,
            })
        });
        started.await.map_err(StoreError::backend)?
    }

    /// Commit whatever batch is open (at shutdown).
    pub(crate) async fn flush(&self) {
        let _ = self.conn.lock().await.finish().await;
    }
}

impl Member {
    /// The writer connection, inside this member's savepoint.
    pub(crate) fn conn(&mut self) -> Result<&mut SqliteConnection, StoreError> {
        match self.guard.as_mut() {
            Some(g) => Ok(&mut g.conn),
            None => Err(StoreError::Backend("a settled write was used again".into())),
        }
    }

    /// Keep this member's writes and return once they are committed.
    pub(crate) async fn commit(self) -> Result<(), StoreError> {
        self.leave(Leave::Keep).await
    }

    /// Undo this member's writes, and return once what it read is durable:
    /// for an answer that wrote nothing but rests on what it read.
    pub(crate) async fn finish_read(self) -> Result<(), StoreError> {
        self.leave(Leave::UndoAndWait).await
    }

    async fn leave(mut self, leave: Leave) -> Result<(), StoreError> {
        let Some(g) = self.guard.take() else {
            return Err(StoreError::Backend("a settled write was used again".into()));
        };
        let waiting = self.waiting.clone();
        let settled = tokio::spawn(settle(g, waiting, leave))
            .await
            .map_err(StoreError::backend)?;
        let (mut rx, generation) = match settled {
            Settled::Done(outcome) => return outcome.map_err(StoreError::from),
            Settled::Pending(rx, generation) => (rx, generation),
        };
        loop {
            match tokio::time::timeout(RESCUE_AFTER, &mut rx).await {
                Ok(Ok(outcome)) => return outcome.map_err(StoreError::from),
                Ok(Err(_)) => {
                    return Err(StoreError::Backend(
                        "the write batch ended without an outcome".into(),
                    ));
                }
                Err(_) => {
                    // Nobody joined after us: commit our own batch, unless it
                    // was committed meanwhile (the outcome is then on `rx`).
                    let conn = self.batch.clone();
                    let _ = tokio::spawn(async move {
                        let mut g = conn.lock_owned().await;
                        if g.open && g.generation == generation {
                            let _ = g.finish().await;
                        }
                    })
                    .await;
                }
            }
        }
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let Some(g) = self.guard.take() else { return };
        // Undo the savepoint now if a runtime is at hand; otherwise the next
        // writer (or a waiting member) does, seeing `savepoint` still set.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let waiting = self.waiting.clone();
            rt.spawn(async move {
                let _ = settle(g, waiting, Leave::Undo).await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};

    /// A database error with SQLite's extended result code `code`.
    #[derive(Debug)]
    struct Coded(&'static str);

    impl std::fmt::Display for Coded {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "sqlite error {}", self.0)
        }
    }

    impl std::error::Error for Coded {}

    impl sqlx::error::DatabaseError for Coded {
        fn message(&self) -> &str {
            "a failed commit"
        }
        fn code(&self) -> Option<std::borrow::Cow<'_, str>> {
            Some(self.0.into())
        }
        fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
            self
        }
        fn kind(&self) -> sqlx::error::ErrorKind {
            sqlx::error::ErrorKind::Other
        }
    }

    /// A COMMIT that failed in its I/O (an fsync after the WAL's commit
    /// frame was written) may be recovered at the next open: unknown. One
    /// that was busy, full or failed a constraint rolled back: nothing.
    #[test]
    fn a_failed_commit_is_unknown_only_when_its_io_failed() {
        let may = |code| commit_may_have_written(&sqlx::Error::Database(Box::new(Coded(code))));
        // SQLITE_IOERR_FSYNC (1034), SQLITE_IOERR_WRITE (778), SQLITE_IOERR,
        // SQLITE_CORRUPT, SQLITE_NOTADB.
        for code in ["1034", "778", "10", "11", "26"] {
            assert!(may(code), "{code}");
        }
        // SQLITE_BUSY, SQLITE_FULL, SQLITE_CONSTRAINT_FOREIGNKEY (787), SQLITE_LOCKED.
        for code in ["5", "13", "787", "6"] {
            assert!(!may(code), "{code}");
        }
        assert!(!commit_may_have_written(&sqlx::Error::PoolTimedOut));
        let told: StoreError = Failed::Unknown.into();
        match told {
            StoreError::Domain(d) => assert_eq!(d.details["outcome"], "unknown"),
            other => panic!("{other:?}"),
        }
    }

    async fn writer() -> (Writer, SqliteConnection, std::path::PathBuf) {
        let path = std::env::temp_dir().join(format!("brain-batch-{}.db", uuid::Uuid::new_v4()));
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full);
        let w = Writer::open(&options).await.unwrap();
        let mut reader = options.connect().await.unwrap();
        exec(&mut reader, "CREATE TABLE t (v INTEGER NOT NULL)")
            .await
            .unwrap();
        (w, reader, path)
    }

    async fn insert(m: &mut Member, v: i64) {
        sqlx::query("INSERT INTO t (v) VALUES (?1)")
            .bind(v)
            .execute(m.conn().unwrap())
            .await
            .unwrap();
    }

    async fn committed(reader: &mut SqliteConnection) -> Vec<i64> {
        sqlx::query_scalar("SELECT v FROM t ORDER BY v")
            .fetch_all(reader)
            .await
            .unwrap()
    }

    fn cleanup(path: &std::path::Path) {
        for ext in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
        }
    }

    /// A member that wrote 1 and committed while another writer waited
    /// (so its commit is pending), and that writer, now holding the batch.
    async fn one_kept_one_behind(
        w: &Arc<Writer>,
    ) -> (tokio::task::JoinHandle<Result<(), StoreError>>, Member) {
        let mut a = w.begin().await.unwrap();
        insert(&mut a, 1).await;
        let w2 = w.clone();
        let b = tokio::spawn(async move { w2.begin().await });
        while w.waiting.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        let a_done = tokio::spawn(a.commit());
        (a_done, b.await.unwrap().unwrap())
    }

    /// A member that another writer waits behind is not answered until the
    /// batch commits; the one behind it going away undoes only its own write
    /// and still commits the first.
    #[tokio::test]
    async fn a_batch_commits_its_kept_members_and_drops_the_rest() {
        let (w, mut reader, path) = writer().await;
        let w = Arc::new(w);
        let (a_done, mut b) = one_kept_one_behind(&w).await;
        // A is in the batch, waiting for B: nothing is committed yet.
        assert!(!a_done.is_finished());
        assert_eq!(committed(&mut reader).await, Vec::<i64>::new());
        insert(&mut b, 2).await;
        drop(b);
        a_done.await.unwrap().unwrap();
        assert_eq!(committed(&mut reader).await, vec![1]);

        // Two kept members share a commit and are both answered.
        let mut c = w.begin().await.unwrap();
        insert(&mut c, 3).await;
        let w2 = w.clone();
        let d = tokio::spawn(async move {
            let mut d = w2.begin().await.unwrap();
            insert(&mut d, 4).await;
            d.commit().await
        });
        while w.waiting.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        c.commit().await.unwrap();
        d.await.unwrap().unwrap();
        assert_eq!(committed(&mut reader).await, vec![1, 3, 4]);
        cleanup(&path);
    }

    /// A member that wrote nothing but read an earlier member's uncommitted
    /// write (a replay) is answered only once that write is committed.
    #[tokio::test]
    async fn an_answer_resting_on_an_uncommitted_read_waits_for_the_commit() {
        let (w, mut reader, path) = writer().await;
        let w = Arc::new(w);
        let (a_done, mut b) = one_kept_one_behind(&w).await;
        let seen: Vec<i64> = sqlx::query_scalar("SELECT v FROM t")
            .fetch_all(b.conn().unwrap())
            .await
            .unwrap();
        assert_eq!(seen, vec![1]);
        assert_eq!(committed(&mut reader).await, Vec::<i64>::new());
        insert(&mut b, 2).await;
        b.finish_read().await.unwrap();
        assert_eq!(committed(&mut reader).await, vec![1]);
        a_done.await.unwrap().unwrap();
        cleanup(&path);
    }

    /// A transaction left open behind the flags' back (a ROLLBACK that
    /// failed) is ended by the next writer instead of refusing every BEGIN.
    #[tokio::test]
    async fn a_transaction_the_flags_lost_is_ended_not_wedged() {
        let (w, mut reader, path) = writer().await;
        {
            let mut g = w.conn.lock().await;
            exec(&mut g.conn, "BEGIN IMMEDIATE").await.unwrap();
            exec(&mut g.conn, "INSERT INTO t (v) VALUES (9)")
                .await
                .unwrap();
        }
        let mut a = w.begin().await.unwrap();
        insert(&mut a, 1).await;
        a.commit().await.unwrap();
        assert_eq!(committed(&mut reader).await, vec![1]);
        cleanup(&path);
    }

    /// A lone member commits at once, and one that fails is undone whole.
    #[tokio::test]
    async fn a_lone_member_commits_and_a_failed_statement_leaves_nothing() {
        let (w, mut reader, path) = writer().await;
        let mut a = w.begin().await.unwrap();
        insert(&mut a, 1).await;
        a.commit().await.unwrap();
        assert_eq!(committed(&mut reader).await, vec![1]);

        let mut b = w.begin().await.unwrap();
        insert(&mut b, 2).await;
        let bad = sqlx::query("INSERT INTO t (v) VALUES (NULL)")
            .execute(b.conn().unwrap())
            .await;
        assert!(bad.is_err());
        drop(b);
        let mut c = w.begin().await.unwrap();
        insert(&mut c, 3).await;
        c.commit().await.unwrap();
        assert_eq!(committed(&mut reader).await, vec![1, 3]);
        cleanup(&path);
    }
}
