//! Which projects' closes lately found what they were decided on moved
//! before their one-call write ([`super::close_in_one_call`]).
//!
//! In a project many agents share, most closes find their rows moved or held
//! by then (another end holds the focus, or a start or end moved the
//! counts), and each such close pays its read, a write that writes nothing,
//! and then the locked way. Measured with `brain-bench --shared-project`
//! (8 and 64 agents on one project): more than 95 % of closes fell back, and
//! pairs ran 5–17 % slower than when every close locked first. So once a
//! project's close falls back, the project's closes lock first for a while,
//! then try again.
//!
//! A close learns its session's project from its read; to skip that read as
//! well, the sessions this replica opened remember which project's slot
//! they are in (another fixed table, by session: an entry overwritten or
//! missing only means the close reads first).
//!
//! When the window is over, one close tries again; if it goes in one call
//! the project is clear, else the window starts again. A close that claimed
//! the try and never got to it (a replay, a refusal, an error) gives the
//! claim back, to the next close.
//!
//! A hint, never a rule: a wrong answer costs a round trip or a lock, never
//! correctness. So it is a fixed table of times, indexed by a keyed hash of
//! the tenant and project: bounded whatever names clients send, and a
//! collision (which a client cannot aim for: the key is random per process)
//! only sends another project's closes the locked way for the window.

use std::hash::BuildHasher;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::ids::{ProjectKey, SessionId, TenantId};

/// A power of two: a project's slot index fits in `SLOT_BITS` bits.
const SLOTS: usize = 1 << SLOT_BITS;
const SLOT_BITS: u32 = 12;
/// How long a project's closes lock first after one fell back.
const WINDOW: Duration = Duration::from_secs(1);

static KEY: LazyLock<std::collections::hash_map::RandomState> =
    LazyLock::new(std::collections::hash_map::RandomState::new);
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);
/// Milliseconds since [`EPOCH`] (plus one, so that 0 is "never") of each
/// slot's last fall-back.
static LAST: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];

/// Per session slot: the session's tag (the high bits of its hash) and, in
/// the low `SLOT_BITS`, its project's index in [`LAST`]; 0 when empty.
static SESSIONS: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];

fn index(tenant: &TenantId, project: &ProjectKey) -> usize {
    let h = KEY.hash_one((tenant.as_str(), project.as_str()));
    (h % SLOTS as u64) as usize
}

fn slot(tenant: &TenantId, project: &ProjectKey) -> &'static AtomicU64 {
    &LAST[index(tenant, project)]
}

/// The session's entry in [`SESSIONS`] and the tag it holds there.
fn session_entry(tenant: &TenantId, session: SessionId) -> (&'static AtomicU64, u64) {
    let h = KEY.hash_one((tenant.as_str(), session.as_uuid().as_u128()));
    let tag = (h >> SLOT_BITS) << SLOT_BITS;
    (
        &SESSIONS[(h % SLOTS as u64) as usize],
        tag.max(1 << SLOT_BITS),
    )
}

/// This replica opened `session` in `project`.
pub(super) fn opened(tenant: &TenantId, session: SessionId, project: &ProjectKey) {
    let (entry, tag) = session_entry(tenant, session);
    entry.store(tag | index(tenant, project) as u64, Ordering::Relaxed);
}

/// What the tables say to a close about to try the one-call way.
pub(super) enum Hint {
    /// No close of its project fell back lately: try.
    Clear,
    /// One did, within the window: lock first.
    Held,
    /// One did, before the window: this close is the one that tries again,
    /// and until it settles the probe the others lock first.
    Probe(Probe),
}

impl Hint {
    /// Whether the close must lock first; a probe it claimed goes to
    /// `probe`, to be settled by what the close finds.
    pub(super) fn holds(self, probe: &mut Option<Probe>) -> bool {
        match self {
            Hint::Held => true,
            Hint::Probe(p) => {
                *probe = Some(p);
                false
            }
            Hint::Clear => false,
        }
    }
}

/// A close's claim to try again for its project. Settled once the close has
/// found out ([`note`] or [`clear`]); dropped unsettled (the close never got
/// to try: a replay, a refusal, an error), it gives the claim back, so that
/// the next close tries instead of the project waiting a window for nothing.
pub(super) struct Probe {
    slot: &'static AtomicU64,
    claimed: u64,
    before: u64,
    settled: bool,
}

impl Probe {
    pub(super) fn settle(mut self) {
        self.settled = true;
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        if !self.settled {
            let back = (self.claimed, self.before);
            let _ =
                self.slot
                    .compare_exchange(back.0, back.1, Ordering::Relaxed, Ordering::Relaxed);
        }
    }
}

/// [`project_hint`] for the project of a session this replica opened;
/// `None` when it does not know the session (then its read tells the
/// project).
pub(super) fn session_hint(tenant: &TenantId, session: SessionId) -> Option<Hint> {
    let (entry, tag) = session_entry(tenant, session);
    let held = entry.load(Ordering::Relaxed);
    let mask = (1u64 << SLOT_BITS) - 1;
    (held & !mask == tag).then(|| slot_hint(&LAST[(held & mask) as usize]))
}

fn now_ms() -> u64 {
    u64::try_from(EPOCH.elapsed().as_millis()).unwrap_or(u64::MAX) + 1
}

/// Whether a close of the project fell back within the window. Once it is
/// over, one close (the first to ask) tries the one-call way again and the
/// others wait for what it finds.
pub(super) fn project_hint(tenant: &TenantId, project: &ProjectKey) -> Hint {
    slot_hint(slot(tenant, project))
}

fn slot_hint(slot: &'static AtomicU64) -> Hint {
    let (last, now) = (slot.load(Ordering::Relaxed), now_ms());
    if last == 0 {
        return Hint::Clear;
    }
    if within(last, now) {
        return Hint::Held;
    }
    match slot.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => Hint::Probe(Probe {
            slot,
            claimed: now,
            before: last,
            settled: false,
        }),
        Err(_) => Hint::Held,
    }
}

/// A close of the project went in one call: its closes need not wait.
pub(super) fn clear(tenant: &TenantId, project: &ProjectKey) {
    let slot = slot(tenant, project);
    if slot.load(Ordering::Relaxed) != 0 {
        slot.store(0, Ordering::Relaxed);
    }
}

/// Whether a fall-back at `last` (0: none) is within the window at `now`.
fn within(last: u64, now: u64) -> bool {
    last != 0 && now.saturating_sub(last) < WINDOW.as_millis() as u64
}

/// A close of the project fell back.
pub(super) fn note(tenant: &TenantId, project: &ProjectKey) {
    slot(tenant, project).store(now_ms(), Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contended(t: &TenantId, p: &ProjectKey) -> bool {
        matches!(project_hint(t, p), Hint::Held)
    }

    fn session_contended(t: &TenantId, s: SessionId) -> Option<bool> {
        session_hint(t, s).map(|h| matches!(h, Hint::Held))
    }

    #[test]
    fn a_fall_back_holds_its_project_back_for_the_window_only() {
        let t = TenantId::parse("contention-test").unwrap();
        let p = fresh_project(&t, &[]);
        assert!(!contended(&t, &p), "no close of it has fallen back");
        note(&t, &p);
        assert!(contended(&t, &p));
        let at = slot(&t, &p).load(Ordering::Relaxed);
        assert!(within(at, at + 999));
        assert!(!within(at, at + 1000), "the window is over");
        assert!(!within(0, 5), "never fell back");
    }

    #[test]
    fn once_the_window_is_over_one_close_tries_again() {
        let t = TenantId::parse("contention-test-3").unwrap();
        let p = fresh_project(&t, &[]);
        note(&t, &p);
        // As if the fall-back were older than the window.
        slot(&t, &p).store(1, Ordering::Relaxed);
        while now_ms() <= 1 + WINDOW.as_millis() as u64 {
            std::thread::sleep(Duration::from_millis(50));
        }
        let probe = project_hint(&t, &p);
        assert!(
            matches!(probe, Hint::Probe(_)),
            "the first close after the window tries"
        );
        assert!(contended(&t, &p), "the others wait for what it finds");
        drop(probe);
        let Hint::Probe(probe) = project_hint(&t, &p) else {
            panic!("a probe that never tried gives its claim back");
        };
        clear(&t, &p);
        probe.settle();
        assert!(
            matches!(project_hint(&t, &p), Hint::Clear),
            "it went in one call"
        );
        note(&t, &p);
        assert!(contended(&t, &p), "or it fell back: another window");
    }

    /// A project of `t` whose slot no test has marked and no project of
    /// `apart` shares: the tables are the process's, and the tests run at
    /// once.
    fn fresh_project(t: &TenantId, apart: &[&ProjectKey]) -> ProjectKey {
        (0..)
            .map(|i| ProjectKey::parse(&format!("project-{i}")).unwrap())
            .find(|p| {
                slot(t, p).load(Ordering::Relaxed) == 0
                    && apart.iter().all(|q| index(t, q) != index(t, p))
            })
            .unwrap()
    }

    /// Sessions of `t` in entries of their own.
    fn fresh_sessions(t: &TenantId) -> (SessionId, SessionId) {
        loop {
            let (a, b) = (SessionId::new_random(), SessionId::new_random());
            if !std::ptr::eq(session_entry(t, a).0, session_entry(t, b).0) {
                return (a, b);
            }
        }
    }

    #[test]
    fn a_session_this_replica_opened_knows_its_projects_contention() {
        let t = TenantId::parse("contention-test-4").unwrap();
        let p = fresh_project(&t, &[]);
        let q = fresh_project(&t, &[&p]);
        let (a, b) = fresh_sessions(&t);
        opened(&t, a, &p);
        opened(&t, b, &q);
        assert_eq!(session_contended(&t, a), Some(false));
        note(&t, &p);
        assert_eq!(session_contended(&t, a), Some(true));
        let quiet = session_contended(&t, b);
        assert_eq!(quiet, Some(false), "a quiet project's session goes on");
        let elsewhere = session_contended(&t, SessionId::new_random());
        assert_eq!(elsewhere, None, "a session opened elsewhere reads first");
        let other = TenantId::parse("contention-test-5").unwrap();
        let other_tenant = session_contended(&other, a);
        assert_eq!(other_tenant, None, "the tenant is part of the key");
    }

    #[test]
    fn other_projects_are_not_held_back_but_for_a_collision() {
        let t = TenantId::parse("contention-test-2").unwrap();
        let p = fresh_project(&t, &[]);
        let quiet: Vec<_> = (0..200)
            .map(|i| ProjectKey::parse(&format!("quiet-{i}")).unwrap())
            .filter(|q| index(&t, q) != index(&t, &p) && !contended(&t, q))
            .collect();
        assert!(quiet.len() > 150, "most have slots of their own");
        note(&t, &p);
        assert!(contended(&t, &p));
        let held = quiet.iter().filter(|q| contended(&t, q)).count();
        assert_eq!(held, 0, "no other project is held back");
    }
}
