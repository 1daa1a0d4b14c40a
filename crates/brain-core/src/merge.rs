//! Three-way line merges of focus bodies, for `brain_session_end`'s `merge`.
//!
//! An end whose `expected_focus_revision` is stale may ask brain to merge its
//! proposal into the current body instead of closing as conflicted: the body
//! the agent read (its revision, from history) is the common ancestor, the
//! proposal is "ours" and the current body "theirs". The merge itself is
//! diffy's (a Myers diff of each side against the ancestor, then diff3).
//!
//! Its CPU grows with the bodies like a diff's, and diffy has no deadline,
//! so it is bounded the same way as [`crate::diff`]: it runs on the blocking
//! pool, in the tenant's lane and the process's one diff turn, and a body of
//! more than [`MERGE_MAX_LINES`] lines is not merged at all (the end closes as
//! conflicted, as without `merge`). A merge never runs inside a transaction.

use std::time::Duration;

use serde_json::{Value, json};

use crate::diff;

/// The most lines any of the three bodies may have to be merged. diffy's
/// Myers diff is quadratic in the worst case (every line of both sides
/// changed): measured with `cargo run -p brain-core --example merge_cost`,
/// 35–41 ms at 1,000 lines and 320–350 ms at 3,000 on the 2-core CI machine.
/// One merge runs at a time per process, so this bounds what one end takes
/// of the one core diffs and merges share.
pub const MERGE_MAX_LINES: usize = 1_000;

/// How long a merge waits for its turn: longer than a diff (an end that
/// does not get it closes as conflicted, which costs the agent a session).
pub const MERGE_TURN_WAIT: Duration = Duration::from_secs(2);

/// What a three-way merge came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    /// Every change of both sides applied.
    Clean(String),
    /// Overlapping changes: the text with diff3 conflict markers.
    Conflicts(String),
    /// Not attempted: a body is over [`MERGE_MAX_LINES`], or the process's
    /// merge turn did not come in time.
    NotMerged(&'static str),
}

impl Merged {
    /// The `merge` object an end that could not merge cleanly answers with.
    pub fn failure_note(&self, base_revision: i64, onto: i64) -> Option<Value> {
        match self {
            Merged::Clean(_) => None,
            // Stored with the close's answer, which no quota counts: a text
            // with its markers over one body's bound is not kept.
            Merged::Conflicts(text) if text.len() > crate::requests::limits::FOCUS_MAX_BYTES => {
                Merged::NotMerged(
                    "the merged text with its conflict markers is over the focus size bound",
                )
                .failure_note(base_revision, onto)
            }
            Merged::Conflicts(text) => Some(json!({
                "base_revision": base_revision,
                "onto_revision": onto,
                "conflicts": true,
                "text": text,
            })),
            Merged::NotMerged(why) => Some(json!({
                "base_revision": base_revision,
                "onto_revision": onto,
                "conflicts": true,
                "text": null,
                "not_merged": why,
            })),
        }
    }
}

/// Merge `ours` and `theirs`, both changed from `base`, within the bounds
/// above (in `tenant`'s turn, on the blocking pool).
pub async fn three_way(tenant: &str, base: String, ours: String, theirs: String) -> Merged {
    if [&base, &ours, &theirs]
        .iter()
        .any(|b| b.lines().count() > MERGE_MAX_LINES)
    {
        metrics::counter!("brain_merges_not_computed_total", "why" => "size").increment(1);
        return Merged::NotMerged("a body is over the merge's size bound");
    }
    let Some(turn) = diff::take_turn(tenant, MERGE_TURN_WAIT).await else {
        metrics::counter!("brain_merges_not_computed_total", "why" => "busy").increment(1);
        return Merged::NotMerged("the server was too busy to merge");
    };
    let worked = tokio::task::spawn_blocking(move || {
        let _turn = turn;
        merge_now(&base, &ours, &theirs)
    })
    .await;
    worked.unwrap_or(Merged::NotMerged("the merge failed"))
}

/// The merge, in the calling thread (no bounds: see [`three_way`]).
pub fn merge_now(base: &str, ours: &str, theirs: &str) -> Merged {
    match diffy::merge(base, ours, theirs) {
        Ok(text) => Merged::Clean(text),
        Err(text) => Merged::Conflicts(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "a\nb\nc\nd\ne\n";

    #[test]
    fn disjoint_edits_merge() {
        let ours = "A\nb\nc\nd\ne\n";
        let theirs = "a\nb\nc\nd\nE\n";
        assert_eq!(
            merge_now(BASE, ours, theirs),
            Merged::Clean("A\nb\nc\nd\nE\n".into())
        );
    }

    #[test]
    fn the_same_edit_on_both_sides_is_taken_once() {
        let both = "a\nb\nX\nd\ne\n";
        assert_eq!(merge_now(BASE, both, both), Merged::Clean(both.into()));
    }

    #[test]
    fn overlapping_edits_conflict_with_markers() {
        let Merged::Conflicts(text) = merge_now(BASE, "a\nb\nmine\nd\ne\n", "a\nb\ntheirs\nd\ne\n")
        else {
            panic!("expected conflicts");
        };
        assert!(
            text.contains("<<<<<<<") && text.contains(">>>>>>>"),
            "{text}"
        );
        assert!(text.contains("mine") && text.contains("theirs"), "{text}");
    }

    #[tokio::test]
    async fn a_body_over_the_bound_is_not_merged() {
        let big = "x\n".repeat(MERGE_MAX_LINES + 1);
        let out = three_way("t", String::new(), big, String::new()).await;
        assert!(matches!(out, Merged::NotMerged(_)), "{out:?}");
    }

    /// The worst input within the bound (every line changed on both sides,
    /// no line shared) still merges: it is a conflict, not a hang.
    #[tokio::test]
    async fn the_worst_input_within_the_bound_finishes() {
        let n = MERGE_MAX_LINES;
        let base: String = (0..n).map(|i| format!("b{i}\n")).collect();
        let ours: String = (0..n).map(|i| format!("o{i}\n")).collect();
        let theirs: String = (0..n).map(|i| format!("t{i}\n")).collect();
        let out = three_way("t", base, ours, theirs).await;
        assert!(matches!(out, Merged::Conflicts(_)), "{out:?}");
    }
}
