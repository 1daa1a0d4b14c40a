//! How long brain_core::merge takes on the worst inputs within its bound.
use std::time::Instant;
fn main() {
    let n = brain_core::merge::MERGE_MAX_LINES;
    let cases: Vec<(&str, String, String, String)> = vec![
        (
            "distinct",
            (0..n).map(|i| format!("b{i}\n")).collect(),
            (0..n).map(|i| format!("o{i}\n")).collect(),
            (0..n).map(|i| format!("t{i}\n")).collect(),
        ),
        (
            "repeated",
            "a\n".repeat(n),
            "b\n".repeat(n),
            "c\n".repeat(n),
        ),
        (
            "alternating",
            "a\nb\n".repeat(n / 2),
            "b\na\n".repeat(n / 2),
            "a\na\n".repeat(n / 2),
        ),
        (
            "long lines",
            (0..n).map(|i| format!("{}{i}\n", "x".repeat(80))).collect(),
            (0..n).map(|i| format!("{}{i}\n", "y".repeat(80))).collect(),
            (0..n).map(|i| format!("{}{i}\n", "z".repeat(80))).collect(),
        ),
    ];
    for (name, b, o, t) in cases {
        let s = Instant::now();
        let r = brain_core::merge::merge_now(&b, &o, &t);
        println!(
            "{name}: {:?} (clean: {})",
            s.elapsed(),
            matches!(r, brain_core::merge::Merged::Clean(_))
        );
    }
}
