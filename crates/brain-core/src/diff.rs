//! Unified diffs between focus bodies, for end results and focus history.
//!
//! A line diff is O((N + M) · D) (Myers): two 256 KiB bodies of short lines
//! that share nothing but repeated lines cost minutes of CPU. So every diff
//! has a budget: it runs on the blocking pool (never on an async worker), one
//! at a time per process (so diffs take at most one core whatever the number
//! of callers), and stops at a deadline. A tenant waits for its own turn
//! before the process's (one of [`TENANT_LANES`] lanes, by the tenant's
//! hash), so a tenant that asks for diffs without pause holds at most one
//! place in the queue and others still get theirs (tokio's semaphore is
//! first come, first served). A diff that is not done in time, or that
//! cannot get its turn soon enough, is answered by [`too_costly`]'s sentence
//! instead of a partial diff.

use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use similar::TextDiff;
use tokio::sync::{Semaphore, SemaphorePermit};

/// CPU one diff may take before it gives up.
pub const DIFF_BUDGET: Duration = Duration::from_millis(25);
/// CPU one page of focus history may take for all its diffs together.
pub const PAGE_BUDGET: Duration = Duration::from_millis(60);
/// How long a caller waits for its turn before it answers without a diff.
pub const TURN_WAIT: Duration = Duration::from_millis(150);

/// Diffs computed at once in this process: one, so they cannot take the
/// machine's every core.
static TURN: LazyLock<Semaphore> = LazyLock::new(|| Semaphore::new(1));

/// How many lanes tenants are spread over to queue for [`TURN`].
pub const TENANT_LANES: usize = 64;
static LANES: LazyLock<Vec<Semaphore>> =
    LazyLock::new(|| (0..TENANT_LANES).map(|_| Semaphore::new(1)).collect());

fn lane(tenant: &str) -> &'static Semaphore {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    tenant.hash(&mut h);
    &LANES[(h.finish() as usize) % TENANT_LANES]
}

/// The right to use the process's diff core: `tenant`'s lane, then the
/// process's turn (held by the worker until it is done).
pub type Turn = (SemaphorePermit<'static>, SemaphorePermit<'static>);

/// Wait at most `wait` for `tenant`'s turn; None when it did not come.
/// Shared by everything whose CPU grows with the bodies (diffs, merges).
pub async fn take_turn(tenant: &str, wait: Duration) -> Option<Turn> {
    let turn = async {
        let mine = lane(tenant).acquire().await.ok()?;
        let process = TURN.acquire().await.ok()?;
        Some((mine, process))
    };
    tokio::time::timeout(wait, turn).await.ok().flatten()
}

/// One diff to compute: from `old` to `new`, with the labels of its header.
/// The bodies are shared, not copied (a history page holds 51 of 256 KiB).
#[derive(Debug, Clone)]
pub struct DiffJob {
    pub old: Arc<str>,
    pub new: Arc<str>,
    pub old_label: String,
    pub new_label: String,
}

impl DiffJob {
    pub fn new(old: &str, new: &str, old_label: String, new_label: String) -> Self {
        Self::shared(Arc::from(old), Arc::from(new), old_label, new_label)
    }

    pub fn shared(old: Arc<str>, new: Arc<str>, old_label: String, new_label: String) -> Self {
        Self {
            old,
            new,
            old_label,
            new_label,
        }
    }
}

/// A unified diff from `old` to `new` with three lines of context; empty when
/// equal; [`too_costly`]'s sentence when it is not done by `deadline`.
pub fn unified_until(
    old: &str,
    new: &str,
    old_label: &str,
    new_label: &str,
    deadline: Instant,
) -> String {
    if old == new {
        return String::new();
    }
    if Instant::now() >= deadline {
        return too_costly(old, new, old_label, new_label);
    }
    let diff = TextDiff::configure()
        .deadline(deadline)
        .diff_lines(old, new);
    // similar gives up at the deadline with a coarse (delete all, insert
    // all) diff of what is left: correct but not what a reader wants.
    if Instant::now() >= deadline {
        return too_costly(old, new, old_label, new_label);
    }
    diff.unified_diff()
        .context_radius(3)
        .header(old_label, new_label)
        .to_string()
}

/// A unified diff with [`DIFF_BUDGET`], computed in the calling thread: for
/// callers that are already off the async workers.
pub fn unified(old: &str, new: &str, old_label: &str, new_label: &str) -> String {
    unified_until(old, new, old_label, new_label, Instant::now() + DIFF_BUDGET)
}

/// What a diff that was not computed says instead: the header, then one line
/// that starts with `@@ diff not shown` and gives the two sizes.
pub fn too_costly(old: &str, new: &str, old_label: &str, new_label: &str) -> String {
    format!(
        "--- {old_label}\n+++ {new_label}\n@@ diff not shown: too costly to compute ({} lines -> {} lines) @@\n",
        old.lines().count(),
        new.lines().count()
    )
}

/// One diff of `tenant`'s, on the blocking pool, in its turn, within [`DIFF_BUDGET`].
pub async fn unified_bounded(tenant: &str, job: DiffJob) -> String {
    if job.old == job.new {
        return String::new();
    }
    let mut out = unified_page(tenant, vec![job], DIFF_BUDGET).await;
    out.pop().unwrap_or_default()
}

/// Several diffs of `tenant`'s (a page of history) sharing one `budget`, on
/// the blocking pool, in one turn; each has a fair share of what is left of
/// it, and one that runs out answers [`too_costly`].
pub async fn unified_page(tenant: &str, jobs: Vec<DiffJob>, budget: Duration) -> Vec<String> {
    let fallback = |jobs: &[DiffJob]| {
        jobs.iter()
            .map(|j| {
                if j.old == j.new {
                    String::new()
                } else {
                    too_costly(&j.old, &j.new, &j.old_label, &j.new_label)
                }
            })
            .collect::<Vec<_>>()
    };
    let Some(permit) = take_turn(tenant, TURN_WAIT).await else {
        metrics::counter!("brain_diffs_not_computed_total", "why" => "busy").increment(1);
        return fallback(&jobs);
    };
    let jobs_for_worker = jobs.clone();
    let worked = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        // Each diff gets a fair share of what is left of the budget, so one
        // costly revision does not leave the rest of the page without diffs.
        let page_deadline = Instant::now() + budget;
        let n = jobs_for_worker.len();
        jobs_for_worker
            .iter()
            .enumerate()
            .map(|(i, j)| {
                let left = page_deadline.saturating_duration_since(Instant::now());
                let share = left / u32::try_from(n - i).unwrap_or(u32::MAX);
                let deadline = Instant::now() + share;
                unified_until(&j.old, &j.new, &j.old_label, &j.new_label, deadline)
            })
            .collect::<Vec<_>>()
    })
    .await;
    match worked {
        Ok(diffs) => {
            let skipped = diffs
                .iter()
                .filter(|d| d.contains("\n@@ diff not shown: "))
                .count();
            if skipped > 0 {
                metrics::counter!("brain_diffs_not_computed_total", "why" => "budget")
                    .increment(skipped as u64);
            }
            diffs
        }
        Err(_) => fallback(&jobs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_bodies_have_no_diff() {
        assert_eq!(unified("a\nb\n", "a\nb\n", "x", "y"), "");
    }

    #[test]
    fn a_changed_line_shows_both_sides() {
        let d = unified("keep\nold\n", "keep\nnew\n", "rev 1", "proposal");
        assert!(d.starts_with("--- rev 1\n+++ proposal\n"), "{d}");
        assert!(
            d.contains("-old\n") && d.contains("+new\n") && d.contains(" keep\n"),
            "{d}"
        );
    }

    #[test]
    fn a_diff_past_its_deadline_says_so_instead() {
        let d = unified_until("a\nb\n", "a\nc\n", "r1", "r2", Instant::now());
        assert_eq!(
            d,
            "--- r1\n+++ r2\n@@ diff not shown: too costly to compute (2 lines -> 2 lines) @@\n"
        );
    }

    /// The review's input (SPEC §3.2's largest body, every line changed):
    /// quadratic without the deadline (minutes); here it stops at the budget.
    #[test]
    fn the_quadratic_input_stops_at_the_budget() {
        let old = "a\n".repeat(128 * 1024);
        let new = "b\n".repeat(128 * 1024);
        let d = unified(&old, &new, "r1", "r2");
        assert!(d.contains("@@ diff not shown: too costly"), "{}", &d[..200]);
    }

    #[tokio::test]
    async fn one_costly_revision_leaves_the_rest_of_its_page_their_diffs() {
        let jobs = vec![
            DiffJob::new(
                &"a\n".repeat(128 * 1024),
                &"b\n".repeat(128 * 1024),
                "r1".into(),
                "r2".into(),
            ),
            DiffJob::new("x\n", "y\n", "r0".into(), "r1".into()),
        ];
        let out = unified_page("t", jobs, PAGE_BUDGET).await;
        assert!(out[0].contains("@@ diff not shown"));
        assert!(out[1].contains("-x\n+y\n"), "{}", out[1]);
    }

    #[tokio::test]
    async fn a_page_shares_one_budget_and_keeps_its_order() {
        let jobs = vec![
            DiffJob::new("x\n", "y\n", "r1".into(), "r2".into()),
            DiffJob::new("same\n", "same\n", "r2".into(), "r3".into()),
        ];
        let out = unified_page("t", jobs, PAGE_BUDGET).await;
        assert_eq!(out.len(), 2);
        assert!(out[0].contains("-x\n+y\n"), "{}", out[0]);
        assert_eq!(out[1], "");
    }
}
