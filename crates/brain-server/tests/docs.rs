//! The documentation stands on its own and cannot drift: every link of the
//! README and `docs/` stays inside the repository (or is a public URL) and
//! lands on a file and heading that exist, and `docs/reference.md` names every
//! tool, error code and setting the server has, and nothing it has not.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Every Markdown page a user reads.
fn pages() -> Vec<PathBuf> {
    let root = repo();
    let mut pages: Vec<PathBuf> = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"]
        .iter()
        .map(|p| root.join(p))
        .collect();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    for p in &pages {
        assert!(p.exists(), "{} is missing", p.display());
    }
    pages
}

/// The targets of `[text](target)` links and images, outside code blocks.
fn links(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("");
            out.push(target.to_owned());
            rest = &after[end..];
        }
    }
    out
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces to `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.insert(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

#[test]
fn every_link_stays_in_the_repository_and_lands() {
    let root = repo();
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page.strip_prefix(&root).unwrap().display().to_string();
        for outside in ["../shared", "shared/SPEC", "SPEC.md", "seeds/"] {
            if text.contains(outside) {
                broken.push(format!(
                    "{name}: mentions {outside}, which a clone does not have"
                ));
            }
        }
        for target in links(&text) {
            if target.starts_with("https://")
                || target.starts_with("http://")
                || target.starts_with("mailto:")
            {
                continue;
            }
            let (path, fragment) = match target.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            let Ok(file) = file.canonicalize() else {
                broken.push(format!("{name}: {target} does not exist"));
                continue;
            };
            if !file.starts_with(&root) {
                broken.push(format!("{name}: {target} leaves the repository"));
                continue;
            }
            if let Some(fragment) = fragment
                && file.extension().is_some_and(|x| x == "md")
            {
                let there = std::fs::read_to_string(&file).unwrap();
                if !anchors(&there).contains(fragment) {
                    broken.push(format!("{name}: {target} names no heading"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_readme_is_one_screen() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 250, "README.md has {lines} lines");
}

/// Backticked words of `markdown` (outside code blocks).
fn backticked(markdown: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 1 {
                out.insert(part.trim().to_owned());
            }
        }
    }
    out
}

/// Every setting the server reads: the clap `env = "…"` names of its
/// configuration and command line, and `RUST_LOG`.
fn settings() -> BTreeSet<String> {
    let source = ["src/config.rs", "src/cli.rs", "src/cli/commands.rs"]
        .iter()
        .map(|f| std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(f)).unwrap())
        .collect::<String>();
    let mut out: BTreeSet<String> = source
        .split("env = \"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect();
    // Read by the runtime, not by clap.
    out.insert("RUST_LOG".to_owned());
    out
}

#[test]
fn the_reference_names_every_tool_code_and_setting_and_no_other() {
    let reference = std::fs::read_to_string(repo().join("docs/reference.md")).unwrap();
    let named = backticked(&reference);
    let tools: BTreeSet<String> =
        brain_server::tools::definitions_for(brain_server::profiles::Profiles::all())
            .iter()
            .map(|t| t.name.to_string())
            .collect();
    let codes: BTreeSet<String> = brain_core::ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().to_owned())
        .collect();
    let settings = settings();
    let mut wrong = Vec::new();
    for (what, all) in [
        ("tool", &tools),
        ("error code", &codes),
        ("setting", &settings),
    ] {
        for name in all {
            if !named.contains(name) {
                wrong.push(format!("the {what} `{name}` is not in docs/reference.md"));
            }
        }
    }
    // The other way: each `BRAIN_*` named there is read, and the first cell
    // of each row of a "Tools" or "Error codes" table exists.
    for word in &named {
        let setting_like = word.starts_with("BRAIN_")
            && word
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        if setting_like && !settings.contains(word) {
            wrong.push(format!(
                "docs/reference.md names `{word}`, which the server does not read"
            ));
        }
    }
    for (heading, all, what) in [
        ("tool", &tools, "tool"),
        ("error code", &codes, "error code"),
    ] {
        for name in first_cells(&reference, heading) {
            if !all.contains(&name) {
                wrong.push(format!(
                    "docs/reference.md lists the {what} `{name}`, which does not exist"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The first backticked cell of each table row in the sections whose heading
/// holds `heading` (and, for "tool", not "error").
fn first_cells(markdown: &str, heading: &str) -> Vec<String> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in markdown.lines() {
        if line.starts_with('#') {
            let h = line.to_lowercase();
            inside = h.contains(heading) && (heading != "tool" || !h.contains("error"));
            continue;
        }
        if inside
            && let Some(cell) = line.strip_prefix("| `")
            && let Some(name) = cell.split('`').next()
        {
            out.push(name.to_owned());
        }
    }
    out
}
