//! A replica's memory of focus reads (`brain_core::focus_cache`) on a real
//! PostgreSQL: it answers without a statement, yet never older than a change
//! committed before the read began, whoever made the change, and it forgets
//! everything when its listener is lost.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use brain_core::ids::{ProjectKey, TenantId};
use brain_core::store::{Reads, StoreSettings};
use brain_store_postgres::{PgScope, PgStore};
use sqlx::{Connection, PgConnection};

struct Fixture {
    _db: brain_testkit::TestDb,
    admin: PgConnection,
    tenant: TenantId,
    project: ProjectKey,
}

async fn fixture() -> (Fixture, PgStore) {
    let (db, store) = common::store().await;
    let tenant = TenantId::parse("acme").unwrap();
    let project = ProjectKey::parse("atlas").unwrap();
    let admin = common::admin_with_project(&db, &tenant, &project).await;
    let fx = Fixture {
        _db: db,
        admin,
        tenant,
        project,
    };
    (fx, store)
}

async fn replica(fx: &Fixture) -> PgStore {
    replica_with(fx, StoreSettings::default()).await
}

async fn replica_with(fx: &Fixture, settings: StoreSettings) -> PgStore {
    let scope = PgScope::connect(&fx._db.url, settings)
        .await
        .expect("connect");
    PgStore::new(scope.remembering_focus())
}

impl Fixture {
    /// Write the base focus as any writer would (the trigger announces it).
    async fn write(&mut self, body: &str) -> i64 {
        sqlx::query_scalar(
            "UPDATE focus_bodies SET body = $3, revision = revision + 1, updated_at = now() \
             WHERE tenant_id = $1 AND project = $2 AND slot = '' RETURNING revision",
        )
        .bind(self.tenant.as_str())
        .bind(self.project.as_str())
        .bind(body)
        .fetch_one(&mut self.admin)
        .await
        .expect("write")
    }

    /// Write the base focus with triggers off: a change no replica hears.
    async fn write_unheard(&mut self, body: &str) -> i64 {
        let mut tx = self.admin.begin().await.expect("begin");
        sqlx::query("SET LOCAL session_replication_role = replica")
            .execute(&mut *tx)
            .await
            .expect("replica role");
        let revision = sqlx::query_scalar(
            "UPDATE focus_bodies SET body = $3, revision = revision + 1 \
             WHERE tenant_id = $1 AND project = $2 AND slot = '' RETURNING revision",
        )
        .bind(self.tenant.as_str())
        .bind(self.project.as_str())
        .bind(body)
        .fetch_one(&mut *tx)
        .await
        .expect("write");
        tx.commit().await.expect("commit");
        revision
    }

    async fn read(&self, store: &PgStore) -> (String, i64) {
        let (focus, _) = store
            .focus_with_slots(&self.tenant, &self.project)
            .await
            .expect("read");
        (focus.body, focus.revision)
    }
}

/// Reads until the replica listens (its first reads go to the database).
async fn warm(fx: &Fixture, store: &PgStore) {
    for _ in 0..50 {
        fx.read(store).await;
        if store.focus_memory_size().0 > 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the replica never remembered a read");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remembered_focus_is_answered_without_the_database() {
    let (mut fx, plain) = fixture().await;
    let remembering = replica(&fx).await;
    fx.write("v1").await;
    warm(&fx, &remembering).await;
    // A change with the trigger off is one the memory cannot hear of: the
    // remembering replica keeps answering what it read, which shows the
    // answer came from memory; the database has the new body.
    let unheard = fx.write_unheard("v2").await;
    assert_eq!(fx.read(&remembering).await.0, "v1");
    assert_eq!(fx.read(&plain).await, ("v2".into(), unheard));
    // The next heard change of the project replaces it.
    let heard = fx.write("v3").await;
    assert_eq!(fx.read(&remembering).await, ("v3".into(), heard));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_replica_answers_older_than_a_change_committed_before_the_read() {
    let (mut fx, _) = fixture().await;
    let a = replica(&fx).await;
    let b = replica(&fx).await;
    warm(&fx, &a).await;
    warm(&fx, &b).await;
    for i in 0..200 {
        let body = format!("body {i}");
        let revision = fx.write(&body).await;
        assert_eq!(
            fx.read(&a).await,
            (body.clone(), revision),
            "replica a, write {i}"
        );
        assert_eq!(fx.read(&b).await, (body, revision), "replica b, write {i}");
    }
    // And a slot created after the project was read shows in the listing.
    sqlx::query("INSERT INTO focus_bodies (tenant_id, project, slot) VALUES ($1, $2, 'frontend')")
        .bind(fx.tenant.as_str())
        .bind(fx.project.as_str())
        .execute(&mut fx.admin)
        .await
        .expect("slot");
    let (_, slots) = a
        .focus_with_slots(&fx.tenant, &fx.project)
        .await
        .expect("read");
    assert_eq!(slots.len(), 1);
    assert_eq!(slots[0].0.as_str(), "frontend");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_lost_its_listener_forgets_what_it_remembered() {
    let (mut fx, _) = fixture().await;
    let a = replica(&fx).await;
    fx.write("v1").await;
    warm(&fx, &a).await;
    let unheard = fx.write_unheard("v2").await;
    assert_eq!(fx.read(&a).await.0, "v1", "answered from memory");
    // Changes made while the listener is away go unheard, so losing it must
    // forget everything.
    let listeners: Vec<i32> = sqlx::query_scalar(
        "SELECT pid FROM pg_stat_activity \
         WHERE datname = current_database() AND query ILIKE 'LISTEN%'",
    )
    .fetch_all(&mut fx.admin)
    .await
    .expect("listeners");
    assert!(!listeners.is_empty(), "found the listener");
    sqlx::query("SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid")
        .bind(&listeners)
        .execute(&mut fx.admin)
        .await
        .expect("terminate");
    // Gone, so nothing more is heard through it.
    for _ in 0..100 {
        let left: i64 =
            sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)")
                .bind(&listeners)
                .fetch_one(&mut fx.admin)
                .await
                .expect("count");
        if left == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for _ in 0..20 {
        assert_eq!(fx.read(&a).await, ("v2".into(), unheard));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // And it listens again: reads are remembered, and answered from memory.
    warm(&fx, &a).await;
    fx.write_unheard("v3").await;
    assert_eq!(
        fx.read(&a).await,
        ("v2".into(), unheard),
        "answered from memory again"
    );
}

/// The next notification `heard` hears (its payload).
async fn next(heard: &mut sqlx::postgres::PgListener) -> String {
    let n = tokio::time::timeout(std::time::Duration::from_secs(5), heard.recv())
        .await
        .expect("heard in time")
        .expect("listening");
    n.payload().to_owned()
}

impl Fixture {
    /// A notification on a channel of the test's own (one on the memory's
    /// channel that is not a project's would make every replica forget
    /// everything), committed after everything before it: what a connection
    /// listening to both hears before it was committed before it.
    async fn mark(&mut self) {
        sqlx::query("SELECT pg_notify('brain_test_mark', 'mark')")
            .execute(&mut self.admin)
            .await
            .expect("mark");
    }

    /// The memory's payload for this project's change (the trigger's
    /// `json_build_array` text).
    fn changed(&self) -> String {
        format!(
            "[\"{}\", \"{}\"]",
            self.tenant.as_str(),
            self.project.as_str()
        )
    }
}

/// An update of focus rows no replica remembers is not announced: a NOTIFY
/// makes its transaction's commit hold a lock of the whole database cluster
/// through its WAL flush. Once a remembering replica has read the project,
/// its updates are announced, and the replica answers them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_updates_of_a_remembered_project_are_announced() {
    let (mut fx, _) = fixture().await;
    let mut heard = sqlx::postgres::PgListener::connect(&fx._db.inspect_url)
        .await
        .expect("listener");
    heard
        .listen_all(["brain_focus_changed", "brain_test_mark"])
        .await
        .expect("listen");
    fx.write("v1").await;
    fx.mark().await;
    assert_eq!(
        next(&mut heard).await,
        "mark",
        "an unremembered update is not announced"
    );

    let a = replica(&fx).await;
    warm(&fx, &a).await;
    let revision = fx.write("v2").await;
    fx.mark().await;
    assert_eq!(
        next(&mut heard).await,
        fx.changed(),
        "a remembered project's update is"
    );
    assert_eq!(next(&mut heard).await, "mark");
    assert_eq!(fx.read(&a).await, ("v2".into(), revision));
}

/// A read while another transaction holds one of the project's unwatched
/// rows cannot mark it (that transaction may commit unannounced after the
/// read): it is answered from the database and not remembered, and the
/// held change, committed unannounced, is what the next read answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_beside_a_held_unwatched_row_is_not_remembered() {
    use sqlx::Connection;
    let (mut fx, _) = fixture().await;
    let a = replica(&fx).await;
    fx.write("v1").await;
    warm(&fx, &a).await;
    // Unwatched again (not announced: a mark changes nothing a read
    // answers), and the memory told to forget the project.
    sqlx::query(
        "UPDATE focus_bodies SET watched_until = NULL WHERE tenant_id = $1 AND project = $2",
    )
    .bind(fx.tenant.as_str())
    .bind(fx.project.as_str())
    .execute(&mut fx.admin)
    .await
    .expect("unwatch");
    sqlx::query("SELECT pg_notify('brain_focus_changed', $1)")
        .bind(fx.changed())
        .execute(&mut fx.admin)
        .await
        .expect("forget");
    for _ in 0..100 {
        if a.focus_memory_size().0 == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(a.focus_memory_size().0, 0, "forgotten");

    let mut holder = PgConnection::connect(&fx._db.inspect_url)
        .await
        .expect("holder");
    let mut held = holder.begin().await.expect("begin");
    sqlx::query(
        "SELECT 1 FROM focus_bodies WHERE tenant_id = $1 AND project = $2 AND slot = '' \
         FOR UPDATE",
    )
    .bind(fx.tenant.as_str())
    .bind(fx.project.as_str())
    .execute(&mut *held)
    .await
    .expect("hold");
    assert_eq!(fx.read(&a).await.0, "v1", "answered beside the held row");
    let one = a
        .focus_get(&fx.tenant, &fx.project, None)
        .await
        .expect("read one");
    assert_eq!(one.body, "v1", "and by the other read");
    assert_eq!(a.focus_memory_size().0, 0, "neither remembered");
    let revision: i64 = sqlx::query_scalar(
        "UPDATE focus_bodies SET body = 'v2', revision = revision + 1 \
         WHERE tenant_id = $1 AND project = $2 AND slot = '' RETURNING revision",
    )
    .bind(fx.tenant.as_str())
    .bind(fx.project.as_str())
    .fetch_one(&mut *held)
    .await
    .expect("write");
    held.commit().await.expect("commit");
    assert_eq!(fx.read(&a).await, ("v2".into(), revision));
    // Unheld, the next read marks the rows and is remembered again.
    warm(&fx, &a).await;
    let watched: Vec<bool> = sqlx::query_scalar(
        "SELECT watched_until > now() + interval '4 minutes' FROM focus_bodies \
         WHERE tenant_id = $1 AND project = $2",
    )
    .bind(fx.tenant.as_str())
    .bind(fx.project.as_str())
    .fetch_all(&mut fx.admin)
    .await
    .expect("watched");
    assert!(watched.iter().all(|w| *w), "{watched:?}");
}

/// A mark lasts a while (`focus_watch_secs`): once it is over, the project's
/// updates are no longer announced, and the replica that marked it has let go
/// of what it read; its next read goes to the database and marks again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_nobody_reads_stops_being_announced() {
    let (mut fx, _) = fixture().await;
    let mut heard = sqlx::postgres::PgListener::connect(&fx._db.inspect_url)
        .await
        .expect("listener");
    heard
        .listen_all(["brain_focus_changed", "brain_test_mark"])
        .await
        .expect("listen");
    let settings = StoreSettings {
        focus_watch_secs: 2,
        ..StoreSettings::default()
    };
    let a = replica_with(&fx, settings).await;
    fx.write("v1").await;
    warm(&fx, &a).await;
    let marked = std::time::Instant::now();
    let revision = fx.write("v2").await;
    fx.mark().await;
    assert_eq!(
        next(&mut heard).await,
        fx.changed(),
        "announced while marked"
    );
    assert_eq!(next(&mut heard).await, "mark");
    assert_eq!(fx.read(&a).await, ("v2".into(), revision));
    if marked.elapsed() < std::time::Duration::from_millis(500) {
        // Within the mark's first half: answered from memory, not marked again.
        fx.write_unheard("unheard").await;
        assert_eq!(fx.read(&a).await.0, "v2", "from memory");
    }
    tokio::time::sleep(std::time::Duration::from_millis(2_200)).await;
    // The trigger gives a mark a minute more (room for clocks to disagree):
    // the rows' marks are moved past it by hand, which announces nothing.
    sqlx::query(
        "UPDATE focus_bodies SET watched_until = now() - interval '61 seconds' \
         WHERE tenant_id = $1 AND project = $2",
    )
    .bind(fx.tenant.as_str())
    .bind(fx.project.as_str())
    .execute(&mut fx.admin)
    .await
    .expect("past");
    let revision = fx.write("v3").await;
    fx.mark().await;
    assert_eq!(
        next(&mut heard).await,
        "mark",
        "not announced once the mark ran out"
    );
    assert_eq!(
        fx.read(&a).await,
        ("v3".into(), revision),
        "the replica let go of what it read"
    );
    // That read marked the rows again: the next update is announced.
    fx.write("v4").await;
    fx.mark().await;
    assert_eq!(next(&mut heard).await, fx.changed());
    assert_eq!(next(&mut heard).await, "mark");
    // And so is one within the minute after a mark ran out.
    sqlx::query(
        "UPDATE focus_bodies SET watched_until = now() - interval '50 seconds' \
         WHERE tenant_id = $1 AND project = $2",
    )
    .bind(fx.tenant.as_str())
    .bind(fx.project.as_str())
    .execute(&mut fx.admin)
    .await
    .expect("just past");
    fx.write("v5").await;
    fx.mark().await;
    assert_eq!(next(&mut heard).await, fx.changed(), "within the minute");
}

/// A mark writes at most 256 rows: a project with more is answered from the
/// database, not remembered, and none of its rows is marked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_too_wide_to_mark_is_read_not_remembered() {
    let (mut fx, _) = fixture().await;
    let a = replica(&fx).await;
    fx.write("v1").await;
    warm(&fx, &a).await;
    sqlx::query(
        "INSERT INTO focus_bodies (tenant_id, project, slot) \
         SELECT $1, $2, 's' || g FROM generate_series(1, 256) g",
    )
    .bind(fx.tenant.as_str())
    .bind(fx.project.as_str())
    .execute(&mut fx.admin)
    .await
    .expect("slots");
    sqlx::query("UPDATE focus_bodies SET watched_until = NULL WHERE tenant_id = $1")
        .bind(fx.tenant.as_str())
        .execute(&mut fx.admin)
        .await
        .expect("unwatch");
    for _ in 0..100 {
        if a.focus_memory_size().0 == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for _ in 0..3 {
        assert_eq!(fx.read(&a).await.0, "v1");
    }
    assert_eq!(a.focus_memory_size().0, 0, "not remembered");
    let marked: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM focus_bodies WHERE tenant_id = $1 AND watched_until IS NOT NULL",
    )
    .bind(fx.tenant.as_str())
    .fetch_one(&mut fx.admin)
    .await
    .expect("count");
    assert_eq!(marked, 0);
    // One row fewer, and it is marked and remembered again.
    sqlx::query("DELETE FROM focus_bodies WHERE tenant_id = $1 AND slot = 's1'")
        .bind(fx.tenant.as_str())
        .execute(&mut fx.admin)
        .await
        .expect("delete");
    warm(&fx, &a).await;
}

/// An end that updates and commits a row while a mark is on its way to lock
/// it: the mark locks the row's newest version, and must mark that version
/// (or answer that nothing may be remembered). Here a row-level security
/// policy makes the mark's row lock wait on its scan while the end commits.
/// When the lock and the update were one statement, the update's older
/// snapshot did not see the version locked: the row stayed unmarked, and the
/// mark still answered that the read could be kept for the whole time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mark_racing_an_end_marks_the_row_it_locked() {
    let (mut fx, _) = fixture().await;
    for statement in [
        // Sleeps the second time it runs in a session set to: the mark's
        // count of rows is the first, its lock's scan the second.
        "CREATE FUNCTION test_slow() RETURNS boolean LANGUAGE plpgsql AS $$
         DECLARE n int := COALESCE(NULLIF(current_setting('test.calls', true), ''), '0')::int;
         BEGIN
             IF current_setting('test.slow', true) IS DISTINCT FROM 'on' THEN RETURN true; END IF;
             PERFORM set_config('test.calls', (n + 1)::text, false);
             IF n = 1 THEN PERFORM pg_sleep(1.5); END IF;
             RETURN true;
         END $$",
        "CREATE POLICY test_slow ON focus_bodies AS RESTRICTIVE USING (test_slow())",
    ] {
        sqlx::query(statement)
            .execute(&mut fx.admin)
            .await
            .expect("set up");
    }
    let mut app = PgConnection::connect(&fx._db.url).await.expect("app");
    sqlx::query("SET test.slow = 'on'")
        .execute(&mut app)
        .await
        .expect("slow");
    let (tenant, project) = (
        fx.tenant.as_str().to_owned(),
        fx.project.as_str().to_owned(),
    );
    let marking = tokio::spawn(async move {
        let ms: Option<i64> = sqlx::query_scalar("SELECT brain_focus_watch($1, $2, 300)")
            .bind(tenant)
            .bind(project)
            .fetch_one(&mut app)
            .await
            .expect("mark");
        ms
    });
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    fx.write("by the end").await;
    let ms = marking.await.expect("marked");
    let unmarked: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM focus_bodies WHERE tenant_id = $1 AND project = $2 \
         AND (watched_until IS NULL OR watched_until < now())",
    )
    .bind(fx.tenant.as_str())
    .bind(fx.project.as_str())
    .fetch_one(&mut fx.admin)
    .await
    .expect("count");
    assert!(
        ms.is_none() || unmarked == 0,
        "the mark answered {ms:?} ms with {unmarked} row(s) unmarked"
    );
    assert_eq!(unmarked, 0, "the row it locked is marked");
}

/// A row moved by hand from a project nobody read into one a replica
/// remembers (brain never moves one) is announced to both, though the row
/// was not watched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_moved_into_a_remembered_project_is_heard() {
    let (mut fx, _) = fixture().await;
    let a = replica(&fx).await;
    sqlx::query("SELECT brain_ensure_project($1, $2, 'elsewhere', now())")
        .bind(fx.tenant.as_str())
        .bind(brain_core::receipt::GENESIS_HASH)
        .execute(&mut fx.admin)
        .await
        .expect("project");
    sqlx::query(
        "INSERT INTO focus_bodies (tenant_id, project, slot) VALUES ($1, 'elsewhere', 'x')",
    )
    .bind(fx.tenant.as_str())
    .execute(&mut fx.admin)
    .await
    .expect("slot");
    warm(&fx, &a).await;
    let (_, slots) = a
        .focus_with_slots(&fx.tenant, &fx.project)
        .await
        .expect("read");
    assert!(slots.is_empty(), "{slots:?}");
    sqlx::query(
        "UPDATE focus_bodies SET project = $2 WHERE tenant_id = $1 AND project = 'elsewhere' \
         AND slot = 'x'",
    )
    .bind(fx.tenant.as_str())
    .bind(fx.project.as_str())
    .execute(&mut fx.admin)
    .await
    .expect("move");
    let (_, slots) = a
        .focus_with_slots(&fx.tenant, &fx.project)
        .await
        .expect("read");
    assert_eq!(slots.len(), 1, "the moved slot shows");
    assert_eq!(slots[0].0.as_str(), "x");
}

/// A replica with focus memory holds one LISTEN connection: the memory's
/// listener also tells the resource subscribers of applied ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_listen_connection_serves_the_memory_and_the_subscribers() {
    use brain_core::feed::FocusChange;
    use brain_core::store::Store;
    let (mut fx, _) = fixture().await;
    let a = replica(&fx).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    a.watch_focus(std::sync::Arc::new(move |c| {
        let _ = tx.send(c);
    }))
    .await
    .expect("watch");
    let listening: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity \
         WHERE datname = current_database() AND query ILIKE 'LISTEN%'",
    )
    .fetch_one(&mut fx.admin)
    .await
    .expect("count");
    assert_eq!(listening, 1, "one LISTEN connection per replica");
    let change = FocusChange {
        tenant: fx.tenant.clone(),
        project: fx.project.clone(),
        slot: None,
        revision: 7,
    };
    sqlx::query("SELECT pg_notify('brain_focus', $1)")
        .bind(change.to_payload())
        .execute(&mut fx.admin)
        .await
        .expect("notify");
    let heard = tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv())
        .await
        .expect("heard in time");
    assert_eq!(heard, Some(change));
}

/// A TCP proxy to PostgreSQL that can black-hole, when asked, the
/// connections that had sent `LISTEN` (the listener's) or set
/// `synchronous_commit` (the fence marker sender's): from then on their bytes
/// vanish both ways and their sockets stay open, as on a network path that
/// went dead, where no error ever arrives. Connections opened later pass.
mod black_hole {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    #[derive(Default)]
    struct Link {
        listens: AtomicBool,
        sends_markers: AtomicBool,
        holed: AtomicBool,
    }

    pub struct Proxy {
        pub addr: std::net::SocketAddr,
        links: Arc<Mutex<Vec<Arc<Link>>>>,
    }

    impl Proxy {
        pub async fn to(upstream: String) -> Proxy {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("addr");
            let links: Arc<Mutex<Vec<Arc<Link>>>> = Arc::default();
            let all = links.clone();
            tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    let Ok(server) = TcpStream::connect(&upstream).await else {
                        continue;
                    };
                    let link = Arc::new(Link::default());
                    all.lock().unwrap().push(link.clone());
                    let (cr, cw) = client.into_split();
                    let (sr, sw) = server.into_split();
                    tokio::spawn(pipe(cr, sw, link.clone(), true));
                    tokio::spawn(pipe(sr, cw, link, false));
                }
            });
            Proxy { addr, links }
        }

        /// Black-hole every connection that has sent `LISTEN`; how many.
        pub fn hole_listeners(&self) -> usize {
            self.hole(|l| l.listens.load(Ordering::SeqCst))
        }

        /// Black-hole every connection that sends fence markers; how many.
        pub fn hole_marker_senders(&self) -> usize {
            self.hole(|l| l.sends_markers.load(Ordering::SeqCst))
        }

        fn hole(&self, which: impl Fn(&Link) -> bool) -> usize {
            let links = self.links.lock().unwrap();
            let mut n = 0;
            for l in links.iter().filter(|l| which(l)) {
                l.holed.store(true, Ordering::SeqCst);
                n += 1;
            }
            n
        }
    }

    async fn pipe(
        mut from: tokio::net::tcp::OwnedReadHalf,
        mut to: tokio::net::tcp::OwnedWriteHalf,
        link: Arc<Link>,
        from_client: bool,
    ) {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if from_client && buf[..n].windows(6).any(|w| w == b"LISTEN") {
                link.listens.store(true, Ordering::SeqCst);
            }
            if from_client && buf[..n].windows(18).any(|w| w == b"synchronous_commit") {
                link.sends_markers.store(true, Ordering::SeqCst);
            }
            if link.holed.load(Ordering::SeqCst) {
                continue;
            }
            if to.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    }
}

/// A replica reading focus through `proxy` (from memory once warm).
async fn replica_via(fx: &Fixture, proxy: &black_hole::Proxy) -> PgStore {
    let url = fx._db.url.clone();
    let (head, tail) = url.split_once('@').expect("a URL with a user");
    let (_, path) = tail.split_once('/').expect("a URL with a database");
    let via_proxy = format!("{head}@{}/{path}", proxy.addr);
    let scope = PgScope::connect(&via_proxy, StoreSettings::default())
        .await
        .expect("connect through the proxy");
    PgStore::new(scope.remembering_focus())
}

/// The upstream `host:port` of the fixture's database.
fn upstream(fx: &Fixture) -> String {
    let (_, tail) = fx._db.url.split_once('@').expect("a URL with a user");
    let (host, _) = tail.split_once('/').expect("a URL with a database");
    host.to_owned()
}

/// What both black-hole tests check once their connection is holed: three
/// reads of unheard changes are right and none hangs (each waits out its
/// fence, 2 s at most, and asks the database); then, once the replica
/// remembers again and `settle` has passed, five reads of new changes are
/// right and none waits out its fence (each is answered by a marker heard
/// on a working connection).
async fn reads_stay_right_through_the_hole(
    fx: &mut Fixture,
    a: &PgStore,
    settle: std::time::Duration,
) {
    for i in 0..3 {
        let body = format!("while black-holed {i}");
        let revision = fx.write(&body).await;
        // A liveness guard, not a speed claim: a read that never answers
        // fails here instead of hanging the suite.
        let read = tokio::time::timeout(std::time::Duration::from_secs(60), fx.read(a))
            .await
            .unwrap_or_else(|_| panic!("read {i} hangs"));
        assert_eq!(read, (body, revision), "read {i}");
    }
    warm(fx, a).await;
    tokio::time::sleep(settle).await;
    let before = a.focus_fences_waited_out();
    for i in 0..5 {
        let body = format!("after {i}");
        let revision = fx.write(&body).await;
        assert_eq!(fx.read(a).await, (body, revision), "read {i} after");
    }
    assert_eq!(
        a.focus_fences_waited_out(),
        before,
        "reads after the replica listens again are answered by markers heard, not by waiting"
    );
    assert!(a.focus_memory_size().0 > 0, "remembered again");
}

/// The listener's connection goes dead without an error (a black-holed
/// socket). Reads stay right: each waits out its fence (2 s) and reads the
/// database, and none hangs. After three such reads the replica takes the
/// listener for dead and listens on a new connection, and reads are answered
/// from memory again, as quickly as before (a carried-over gap: no test had
/// a socket that stops answering without an error).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_holed_listener_is_replaced_and_reads_stay_right() {
    let (mut fx, _) = fixture().await;
    let proxy = black_hole::Proxy::to(upstream(&fx)).await;
    let a = replica_via(&fx, &proxy).await;
    fx.write("v1").await;
    warm(&fx, &a).await;
    assert_eq!(proxy.hole_listeners(), 1, "one listener to black-hole");
    reads_stay_right_through_the_hole(&mut fx, &a, std::time::Duration::ZERO).await;
}

/// The fence's marker sender's connection goes dead without an error (a
/// carried-over gap: only the listener's had a test). The read whose marker
/// went into the hole waits out its fence (2 s) and reads the database; the
/// sender gives the connection up after as long, and reads go to the
/// database until it sends on a new one; then reads are answered from
/// memory again, right and as quickly as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_holed_marker_sender_is_replaced_and_reads_stay_right() {
    let (mut fx, _) = fixture().await;
    let proxy = black_hole::Proxy::to(upstream(&fx)).await;
    let a = replica_via(&fx, &proxy).await;
    fx.write("v1").await;
    warm(&fx, &a).await;
    assert_eq!(
        proxy.hole_marker_senders(),
        1,
        "one marker sender to black-hole"
    );
    // Time for a sender stuck on the dead socket to show: a read that waits
    // for its marker would take the fence's 2 s.
    reads_stay_right_through_the_hole(&mut fx, &a, std::time::Duration::from_secs(3)).await;
}
