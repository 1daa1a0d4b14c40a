//! A replica's memory of its focus reads (`brain_focus_get`, the focus
//! resources), answered without a statement and never older than a write
//! that answered before the read began, on any replica.
//!
//! Two things make a remembered answer safe to give:
//! - **Every change is heard.** The store announces each change to a
//!   project's focus rows that a replica may remember in the changing
//!   transaction (PostgreSQL: a trigger's NOTIFY, for rows a replica marked
//!   before the read it keeps), and [`FocusCache::forget`] drops the project. A read that filled
//!   the memory keeps its answer only when nothing of its project was heard
//!   between its start and its answer ([`Ticket`]); a lost connection forgets
//!   everything ([`FocusCache::forget_all`]).
//! - **Nothing is answered past the time its changes are announced until.**
//!   PostgreSQL announces a project's updates only while its rows are marked
//!   watched, each mark for a while; a store that marks gives the ticket the
//!   instant its memory must let go by ([`Ticket::trusted_for`]). The
//!   project is forgotten at the latest such instant: a later mark leaves
//!   every row watched at least until the instant it gives (it marks again
//!   those with less time left), so it covers the answers kept before it,
//!   and answers kept under a mark that ran out are never kept on under a
//!   new one. The instant is kept on the monotonic and the wall clock both,
//!   and passes when either passes it.
//! - **A read first hears everything committed before it began.** The
//!   store's [`Fence`] waits until this replica has heard a marker it sent
//!   after the read began; a change committed before the marker is heard
//!   before it (PostgreSQL delivers notifications in commit order). One
//!   marker serves every read waiting at the time. When the store cannot
//!   tell (not listening), the read goes to the database.
//!
//! Bounded: at most [`MAX_PROJECTS`] projects, [`MAX_ANSWERS_PER_PROJECT`]
//! answers each, and [`MAX_BYTES`] counted with a fixed cost per answer and
//! per project beside the text (so a flood of reads of tiny or absent slots
//! is bounded too); past the projects or bytes the memory starts over empty.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime};

use async_trait::async_trait;

use crate::ids::{ProjectKey, SlotName, TenantId};
use crate::model::{Focus, Revision};

/// Projects remembered at most.
pub const MAX_PROJECTS: usize = 8_192;
/// Bytes remembered at most: text plus [`ANSWER_COST`] per answer and
/// [`PROJECT_COST`] per project.
pub const MAX_BYTES: usize = 32 * 1024 * 1024;
/// Answers remembered per project (its base focus, with slots, and one per
/// slot name read, whether or not the slot exists); beyond, answers go
/// unremembered until the project changes.
pub const MAX_ANSWERS_PER_PROJECT: usize = 256;
/// What an answer costs beside its text: the map entry, the `Arc`, the
/// `Focus` and its other fields (measured about 200 bytes; rounded up).
pub const ANSWER_COST: usize = 256;
/// What a project costs beside its answers: its keys and maps.
pub const PROJECT_COST: usize = 256;
/// Change counters; a change bumps the one its project hashes to, so two
/// projects that share one only cost each other a fill.
const BUCKETS: usize = 1_024;

/// The base focus with its slots' names and revisions.
pub type FocusWithSlots = (Focus, Vec<(SlotName, Revision)>);

/// How a store tells a read that it has heard every change committed before
/// the read began.
#[async_trait]
pub trait Fence: Send + Sync {
    /// True once every focus change committed (by any replica) before this
    /// call has been passed to [`FocusCache::forget`]; false when that cannot
    /// be known now (the store is not listening, or took too long).
    async fn pass(&self) -> bool;
}

pub struct FocusCache {
    fence: Arc<dyn Fence>,
    hasher: RandomState,
    held: Mutex<Held>,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// What `/metrics` shows of the memory: reads answered from it, reads that
/// went to the database, and what it holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FocusMemoryStats {
    pub hits: u64,
    pub misses: u64,
    pub projects: usize,
    pub bytes: usize,
}

/// Leave to keep a database answer, given out on a miss: valid while no
/// change of its project's bucket was heard since.
#[derive(Debug)]
pub struct Ticket {
    bucket: usize,
    changes: u64,
    resets: u64,
    /// When the answer must be let go of; none: when its project changes.
    until: Option<Moment>,
}

/// An instant on both of this host's clocks: passed when either says so.
/// The monotonic clock does not jump with the wall clock; the wall clock
/// goes on while the host is suspended, when the monotonic clock stops and
/// the database's marks run out all the same. A store reads one
/// ([`Moment::now`]) before it asks the database how long an answer may be
/// kept, and the answer's deadline is that moment plus the time given.
#[derive(Debug, Clone, Copy)]
pub struct Moment {
    mono: Instant,
    wall: SystemTime,
}

impl Moment {
    pub fn now() -> Self {
        Self {
            mono: Instant::now(),
            wall: SystemTime::now(),
        }
    }

    fn after(self, d: std::time::Duration) -> Self {
        Self {
            mono: self.mono + d,
            wall: self.wall + d,
        }
    }

    fn passed(&self) -> bool {
        self.mono <= Instant::now() || self.wall <= SystemTime::now()
    }

    /// The later of two, clock by clock.
    fn later(a: Option<Self>, b: Option<Self>) -> Option<Self> {
        match (a, b) {
            (Some(a), Some(b)) => Some(Self {
                mono: a.mono.max(b.mono),
                wall: a.wall.max(b.wall),
            }),
            (a, b) => a.or(b),
        }
    }
}

impl Ticket {
    /// The answer kept with this ticket is answered for `lasting` from
    /// `asked` at most: its project's changes are announced until then, and
    /// may not be after.
    pub fn trusted_for(self, asked: Moment, lasting: std::time::Duration) -> Self {
        Self {
            until: Some(asked.after(lasting)),
            ..self
        }
    }
}

/// A read's outcome: the remembered answer, or a miss (with leave to keep
/// the database's answer when the fence passed).
pub enum Look<T> {
    Hit(T),
    Miss(Option<Ticket>),
}

struct Held {
    changes: Vec<u64>,
    resets: u64,
    bytes: usize,
    /// tenant → project → what is remembered of it.
    tenants: HashMap<String, HashMap<String, Project>>,
    projects: usize,
}

#[derive(Default)]
struct Project {
    /// Each answer with the bytes it was counted at.
    with_slots: Option<(Arc<FocusWithSlots>, usize)>,
    /// `focus_get` answers by slot (`None`: the base focus alone).
    bodies: HashMap<Option<SlotName>, (Arc<Focus>, usize)>,
    bytes: usize,
    /// Answered until then (none: until the project changes).
    until: Option<Moment>,
}

impl Project {
    fn expired(&self) -> bool {
        self.until.is_some_and(|until| until.passed())
    }
}

/// An answer to keep, by the shape of read that asked for it.
enum Answer {
    WithSlots(Arc<FocusWithSlots>),
    One(Option<SlotName>, Arc<Focus>),
}

enum Shape<'a> {
    WithSlots,
    One(Option<&'a SlotName>),
}

impl FocusCache {
    pub fn new(fence: Arc<dyn Fence>) -> Self {
        Self {
            fence,
            hasher: RandomState::new(),
            held: Mutex::new(Held {
                changes: vec![0; BUCKETS],
                resets: 0,
                bytes: 0,
                tenants: HashMap::new(),
                projects: 0,
            }),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    pub fn stats(&self) -> FocusMemoryStats {
        let (projects, bytes) = self.size();
        FocusMemoryStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            projects,
            bytes,
        }
    }

    /// The base focus and its slots, as `brain_focus_get` without a slot reads them.
    pub async fn with_slots(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
    ) -> Look<FocusWithSlots> {
        match self.look(tenant, project, Shape::WithSlots).await {
            Look::Hit(Found::WithSlots(v)) => Look::Hit((*v).clone()),
            Look::Hit(Found::One(_)) => Look::Miss(None),
            Look::Miss(t) => Look::Miss(t),
        }
    }

    /// One body: the base focus (`None`) or a slot's.
    pub async fn one(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
        slot: Option<&SlotName>,
    ) -> Look<Focus> {
        match self.look(tenant, project, Shape::One(slot)).await {
            Look::Hit(Found::One(v)) => Look::Hit((*v).clone()),
            Look::Hit(Found::WithSlots(_)) => Look::Miss(None),
            Look::Miss(t) => Look::Miss(t),
        }
    }

    /// Keep the database's answer to a missed [`Self::with_slots`].
    pub fn keep_with_slots(
        &self,
        ticket: Ticket,
        tenant: &TenantId,
        project: &ProjectKey,
        value: &FocusWithSlots,
    ) {
        let bytes = ANSWER_COST
            + value.0.body.len()
            + value
                .1
                .iter()
                .map(|(s, _)| s.as_str().len() + 32)
                .sum::<usize>();
        let answer = Answer::WithSlots(Arc::new(value.clone()));
        self.keep(ticket, tenant, project, bytes, answer);
    }

    /// Keep the database's answer to a missed [`Self::one`].
    pub fn keep_one(
        &self,
        ticket: Ticket,
        tenant: &TenantId,
        project: &ProjectKey,
        slot: Option<&SlotName>,
        value: &Focus,
    ) {
        let bytes = ANSWER_COST + value.body.len() + slot.map_or(0, |s| s.as_str().len());
        let answer = Answer::One(slot.cloned(), Arc::new(value.clone()));
        self.keep(ticket, tenant, project, bytes, answer);
    }

    /// A change of `project`'s focus rows was heard: forget the project, and
    /// refuse the answers of reads that began before.
    pub fn forget(&self, tenant: &str, project: &str) {
        let bucket = self.bucket(tenant, project);
        let mut held = self.lock();
        held.changes[bucket] += 1;
        held.remove(tenant, project);
    }

    /// Changes may have gone unheard (a lost connection): forget everything,
    /// and refuse the answers of every read begun before.
    pub fn forget_all(&self) {
        let mut held = self.lock();
        held.resets += 1;
        held.clear();
    }

    /// Projects and bytes remembered now.
    pub fn size(&self) -> (usize, usize) {
        let held = self.lock();
        (held.projects, held.bytes)
    }

    async fn look(&self, tenant: &TenantId, project: &ProjectKey, shape: Shape<'_>) -> Look<Found> {
        if !self.fence.pass().await {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return Look::Miss(None);
        }
        let bucket = self.bucket(tenant.as_str(), project.as_str());
        let mut held = self.lock();
        let found = held
            .live(tenant.as_str(), project.as_str())
            .and_then(|p| match shape {
                Shape::WithSlots => p
                    .with_slots
                    .as_ref()
                    .map(|(v, _)| Found::WithSlots(v.clone())),
                Shape::One(slot) => p
                    .bodies
                    .get(&slot.cloned())
                    .map(|(v, _)| Found::One(v.clone())),
            });
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        match found {
            Some(found) => Look::Hit(found),
            None => Look::Miss(Some(Ticket {
                bucket,
                changes: held.changes[bucket],
                resets: held.resets,
                until: None,
            })),
        }
    }

    fn keep(
        &self,
        ticket: Ticket,
        tenant: &TenantId,
        project: &ProjectKey,
        bytes: usize,
        answer: Answer,
    ) {
        // A ticket is leave for the key it was given for, and no other.
        if ticket.bucket != self.bucket(tenant.as_str(), project.as_str()) {
            return;
        }
        let mut held = self.lock();
        if held.changes[ticket.bucket] != ticket.changes || held.resets != ticket.resets {
            return;
        }
        if bytes > MAX_BYTES / 4 {
            return;
        }
        if ticket.until.is_some_and(|until| until.passed()) {
            return;
        }
        // Answers kept under a mark that has run out do not live on under
        // this one.
        let existing = held.live(tenant.as_str(), project.as_str());
        if let (Some(p), Answer::One(slot, _)) = (existing, &answer)
            && p.bodies.len() >= MAX_ANSWERS_PER_PROJECT
            && !p.bodies.contains_key(slot)
        {
            return;
        }
        let known = existing.is_some();
        let project_cost = PROJECT_COST + tenant.as_str().len() + project.as_str().len();
        let added = bytes + if known { 0 } else { project_cost };
        if held.bytes + added > MAX_BYTES || (!known && held.projects >= MAX_PROJECTS) {
            held.clear();
        }
        let projects = held.tenants.entry(tenant.as_str().to_owned()).or_default();
        let new = !projects.contains_key(project.as_str());
        let p = projects.entry(project.as_str().to_owned()).or_default();
        let before = if new { 0 } else { p.bytes };
        if new {
            p.bytes = project_cost;
            p.until = ticket.until;
        } else {
            // A row's mark only ever moves later, and a mark leaves every
            // row of the project watched at least until the instant it gave:
            // the latest covers every answer of the project.
            p.until = Moment::later(p.until, ticket.until);
        }
        // A second answer of the same shape replaces the first: uncount it.
        let replaced = match answer {
            Answer::WithSlots(v) => p.with_slots.replace((v, bytes)).map_or(0, |(_, b)| b),
            Answer::One(slot, v) => p.bodies.insert(slot, (v, bytes)).map_or(0, |(_, b)| b),
        };
        p.bytes = p.bytes + bytes - replaced;
        let after = p.bytes;
        held.bytes = held.bytes + after - before;
        if new {
            held.projects += 1;
        }
    }

    fn bucket(&self, tenant: &str, project: &str) -> usize {
        // usize from u64 keeps the low bits, enough for the modulo.
        (self.hasher.hash_one((tenant, project)) as usize) % BUCKETS
    }

    fn lock(&self) -> MutexGuard<'_, Held> {
        // A panic under the lock leaves counts that only make reads miss.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

enum Found {
    WithSlots(Arc<FocusWithSlots>),
    One(Arc<Focus>),
}

impl Held {
    /// What is remembered of one project, unless its mark has run out:
    /// then it is dropped (its answers may have missed changes since).
    fn live(&mut self, tenant: &str, project: &str) -> Option<&Project> {
        let expired = self
            .tenants
            .get(tenant)
            .and_then(|projects| projects.get(project))
            .is_some_and(Project::expired);
        if expired {
            self.remove(tenant, project);
        }
        self.tenants.get(tenant)?.get(project)
    }

    /// Drop what is remembered of one project.
    fn remove(&mut self, tenant: &str, project: &str) {
        let gone = self
            .tenants
            .get_mut(tenant)
            .and_then(|projects| projects.remove(project));
        if let Some(gone) = gone {
            self.bytes -= gone.bytes;
            self.projects -= 1;
            if self.tenants.get(tenant).is_some_and(HashMap::is_empty) {
                self.tenants.remove(tenant);
            }
        }
    }

    fn clear(&mut self) {
        self.tenants.clear();
        self.bytes = 0;
        self.projects = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    struct Gate(AtomicBool);

    #[async_trait]
    impl Fence for Gate {
        async fn pass(&self) -> bool {
            self.0.load(Ordering::SeqCst)
        }
    }

    fn cache(open: bool) -> FocusCache {
        FocusCache::new(Arc::new(Gate(AtomicBool::new(open))))
    }

    fn focus(body: &str, revision: Revision) -> Focus {
        Focus {
            body: body.into(),
            revision,
            ..Focus::empty()
        }
    }

    fn keys() -> (TenantId, ProjectKey) {
        (
            TenantId::parse("acme").unwrap(),
            ProjectKey::parse("atlas").unwrap(),
        )
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        // The gate never waits, so one poll answers.
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut f = std::pin::pin!(f);
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => panic!("the test fence waited"),
        }
    }

    fn ticket(look: Look<Focus>) -> Ticket {
        match look {
            Look::Miss(Some(t)) => t,
            Look::Miss(None) => panic!("no ticket"),
            Look::Hit(f) => panic!("unexpected hit at revision {}", f.revision),
        }
    }

    #[test]
    fn an_answer_is_not_given_past_its_mark() {
        let c = cache(true);
        let (t, p) = keys();
        let soon = std::time::Duration::from_millis(400);
        let tk = ticket(block_on(c.one(&t, &p, None))).trusted_for(Moment::now(), soon);
        c.keep_one(tk, &t, &p, None, &focus("v1", 1));
        assert!(matches!(block_on(c.one(&t, &p, None)), Look::Hit(_)));
        std::thread::sleep(std::time::Duration::from_millis(500));
        assert!(matches!(block_on(c.one(&t, &p, None)), Look::Miss(Some(_))));
        assert_eq!(c.size().0, 0, "the project is let go of");
        // A ticket whose mark ran out before its answer came keeps nothing.
        let gone = std::time::Duration::ZERO;
        let tk = ticket(block_on(c.one(&t, &p, None))).trusted_for(Moment::now(), gone);
        c.keep_one(tk, &t, &p, None, &focus("v1", 1));
        assert_eq!(c.size().0, 0);
    }

    #[test]
    fn answers_of_a_run_out_mark_do_not_live_on_under_a_new_one() {
        let c = cache(true);
        let (t, p) = keys();
        let soon = std::time::Duration::from_millis(400);
        let tk = ticket(block_on(c.one(&t, &p, None))).trusted_for(Moment::now(), soon);
        c.keep_one(tk, &t, &p, None, &focus("v1", 1));
        let later = std::time::Duration::from_secs(60);
        let slot = SlotName::parse("ui").unwrap();
        let tk = ticket(block_on(c.one(&t, &p, Some(&slot))));
        std::thread::sleep(std::time::Duration::from_millis(500));
        c.keep_one(
            tk.trusted_for(Moment::now(), later),
            &t,
            &p,
            Some(&slot),
            &focus("u", 1),
        );
        assert!(matches!(block_on(c.one(&t, &p, Some(&slot))), Look::Hit(_)));
        assert!(
            matches!(block_on(c.one(&t, &p, None)), Look::Miss(Some(_))),
            "the base focus kept under the first mark is gone"
        );
    }

    #[test]
    fn a_later_mark_holds_the_answers_kept_before_it() {
        let c = cache(true);
        let (t, p) = keys();
        let soon = std::time::Duration::from_millis(400);
        let tk = ticket(block_on(c.one(&t, &p, None))).trusted_for(Moment::now(), soon);
        c.keep_one(tk, &t, &p, None, &focus("v1", 1));
        let later = std::time::Duration::from_secs(60);
        let x = SlotName::parse("x").unwrap();
        let tk = ticket(block_on(c.one(&t, &p, Some(&x)))).trusted_for(Moment::now(), later);
        c.keep_one(tk, &t, &p, Some(&x), &focus("x", 1));
        std::thread::sleep(std::time::Duration::from_millis(500));
        assert!(
            matches!(block_on(c.one(&t, &p, None)), Look::Hit(_)),
            "held by the later mark"
        );
    }

    #[test]
    fn a_kept_answer_is_given_until_its_project_changes() {
        let c = cache(true);
        let (t, p) = keys();
        let tk = ticket(block_on(c.one(&t, &p, None)));
        c.keep_one(tk, &t, &p, None, &focus("a", 1));
        match block_on(c.one(&t, &p, None)) {
            Look::Hit(f) => assert_eq!((f.body.as_str(), f.revision), ("a", 1)),
            Look::Miss(_) => panic!("expected a hit"),
        }
        // The with-slots shape is its own answer.
        assert!(matches!(
            block_on(c.with_slots(&t, &p)),
            Look::Miss(Some(_))
        ));
        c.forget("acme", "atlas");
        assert!(matches!(block_on(c.one(&t, &p, None)), Look::Miss(Some(_))));
        assert_eq!(c.size(), (0, 0));
    }

    #[test]
    fn an_answer_read_across_a_change_is_not_kept() {
        let c = cache(true);
        let (t, p) = keys();
        let tk = ticket(block_on(c.one(&t, &p, None)));
        // A change heard while the read was at the database: its answer may
        // be from before the change.
        c.forget("acme", "atlas");
        c.keep_one(tk, &t, &p, None, &focus("old", 1));
        assert!(matches!(block_on(c.one(&t, &p, None)), Look::Miss(Some(_))));
        let tk = ticket(block_on(c.one(&t, &p, None)));
        c.forget_all();
        c.keep_one(tk, &t, &p, None, &focus("old", 1));
        assert!(matches!(block_on(c.one(&t, &p, None)), Look::Miss(Some(_))));
    }

    #[test]
    fn a_closed_fence_reads_the_database_and_keeps_nothing() {
        let c = cache(false);
        let (t, p) = keys();
        assert!(matches!(block_on(c.one(&t, &p, None)), Look::Miss(None)));
    }

    #[test]
    fn tenants_are_apart() {
        let c = cache(true);
        let (t, p) = keys();
        let other = TenantId::parse("globex").unwrap();
        let tk = ticket(block_on(c.one(&t, &p, None)));
        c.keep_one(tk, &t, &p, None, &focus("acme's", 1));
        assert!(matches!(
            block_on(c.one(&other, &p, None)),
            Look::Miss(Some(_))
        ));
    }

    #[test]
    fn the_memory_is_bounded() {
        let c = cache(true);
        let t = TenantId::parse("acme").unwrap();
        let body = "x".repeat(MAX_BYTES / 8);
        for i in 0..20 {
            let p = ProjectKey::parse(&format!("p{i}")).unwrap();
            let tk = ticket(block_on(c.one(&t, &p, None)));
            c.keep_one(tk, &t, &p, None, &focus(&body, 1));
            let (projects, bytes) = c.size();
            assert!(bytes <= MAX_BYTES && projects <= MAX_PROJECTS);
        }
        for i in 0..(MAX_PROJECTS + 10) {
            let p = ProjectKey::parse(&format!("q{i}")).unwrap();
            let tk = ticket(block_on(c.one(&t, &p, None)));
            c.keep_one(tk, &t, &p, None, &focus("", 1));
        }
        assert!(c.size().0 <= MAX_PROJECTS);
    }

    /// Reads of many tiny or absent slots (each answer a few bytes of text)
    /// are bounded by what an answer costs, not by their text alone.
    #[test]
    fn reads_of_many_slot_names_are_bounded() {
        let c = cache(true);
        let t = TenantId::parse("acme").unwrap();
        for i in 0..300 {
            let p = ProjectKey::parse("atlas").unwrap();
            let s = SlotName::parse(&format!("s{i}")).unwrap();
            let tk = ticket(block_on(c.one(&t, &p, Some(&s))));
            c.keep_one(tk, &t, &p, Some(&s), &focus("", 0));
        }
        let (projects, bytes) = c.size();
        assert_eq!(projects, 1);
        // 256 answers kept, the rest refused.
        assert!(bytes >= MAX_ANSWERS_PER_PROJECT * ANSWER_COST, "{bytes}");
        assert!(
            bytes < (MAX_ANSWERS_PER_PROJECT + 1) * (ANSWER_COST + 8) + PROJECT_COST + 16,
            "{bytes}"
        );
        let over = SlotName::parse("s299").unwrap();
        assert!(matches!(
            block_on(c.one(&t, &ProjectKey::parse("atlas").unwrap(), Some(&over))),
            Look::Miss(Some(_))
        ));
        // Across projects, the byte bound holds with the per-answer cost.
        for i in 0..(MAX_BYTES / ANSWER_COST) {
            let p = ProjectKey::parse(&format!("q{}", i % 4_000)).unwrap();
            let s = SlotName::parse(&format!("s{}", i / 4_000)).unwrap();
            let tk = ticket(block_on(c.one(&t, &p, Some(&s))));
            c.keep_one(tk, &t, &p, Some(&s), &focus("", 0));
            assert!(c.size().1 <= MAX_BYTES);
        }
    }

    #[test]
    fn a_replaced_answer_is_counted_once() {
        let c = cache(true);
        let (t, p) = keys();
        let tk = ticket(block_on(c.one(&t, &p, None)));
        c.keep_one(tk, &t, &p, None, &focus("abc", 1));
        let once = c.size().1;
        // Two reads that missed together both keep their (equal) answer.
        let first = ticket(block_on(c.one(
            &t,
            &p,
            Some(&SlotName::parse("x").unwrap()),
        )));
        let second = ticket(block_on(c.one(
            &t,
            &p,
            Some(&SlotName::parse("x").unwrap()),
        )));
        let x = SlotName::parse("x").unwrap();
        c.keep_one(first, &t, &p, Some(&x), &focus("xyz", 1));
        let with_x = c.size().1;
        c.keep_one(second, &t, &p, Some(&x), &focus("xyz", 1));
        assert_eq!(c.size().1, with_x);
        assert_eq!(with_x - once, ANSWER_COST + 3 + 1);
        c.forget("acme", "atlas");
        assert_eq!(c.size(), (0, 0));
    }
}
