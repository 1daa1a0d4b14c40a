//! Unified diffs between focus bodies, for end results and focus history.

use similar::TextDiff;

/// A unified diff from `old` to `new` with three lines of context; empty when equal.
pub fn unified(old: &str, new: &str, old_label: &str, new_label: &str) -> String {
    if old == new {
        return String::new();
    }
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(old_label, new_label)
        .to_string()
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
}
