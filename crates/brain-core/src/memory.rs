//! Memory: documents, recall results, history entries, and the daily brief's
//! text (SPEC §2.8–2.9, §5, §6).

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Serialize, Serializer};
use serde_json::{Value, json};

use crate::error::{DomainError, ErrorCode};
use crate::ids::{ProjectKey, SessionId};
use crate::model::{Artifact, ArtifactKind, Caller, CredentialKind, Revision, Role, rfc3339};

fn ser_opt_time<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&rfc3339(t)),
        None => s.serialize_none(),
    }
}

fn ser_time<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&rfc3339(t))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DocumentKind {
    ExecutiveState,
    Critique,
    SyncNote,
    MentalModel,
}

impl DocumentKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ExecutiveState => "executive_state",
            Self::Critique => "critique",
            Self::SyncNote => "sync_note",
            Self::MentalModel => "mental_model",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "executive_state" => Self::ExecutiveState,
            "critique" => Self::Critique,
            "sync_note" => Self::SyncNote,
            "mental_model" => Self::MentalModel,
            _ => return None,
        })
    }
}

/// A project document with its revision; revision 0 and an empty body when never written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Document {
    pub kind: DocumentKind,
    /// The model's name for `mental_model`; empty for the others.
    pub name: String,
    pub body: String,
    pub revision: Revision,
    #[serde(serialize_with = "ser_opt_time")]
    pub updated_at: Option<DateTime<Utc>>,
    pub updated_by: Option<String>,
}

impl Document {
    pub fn empty(kind: DocumentKind, name: &str) -> Self {
        Self {
            kind,
            name: name.to_owned(),
            body: String::new(),
            revision: 0,
            updated_at: None,
            updated_by: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct DocumentPut {
    pub project: ProjectKey,
    pub kind: DocumentKind,
    pub name: String,
    pub body: String,
    pub expected_revision: Revision,
    pub digest: String,
}

/// Who may write which document, and what an executive state must hold.
pub fn check_document_put(caller: &Caller, put: &DocumentPut) -> Result<(), DomainError> {
    if put.kind == DocumentKind::MentalModel {
        if caller.kind != CredentialKind::Jwt || caller.role != Role::Operator {
            return Err(DomainError::new(
                ErrorCode::Forbidden,
                "mental models are set by operators only; write critique or sync_note instead",
            ));
        }
        if put.name.trim().is_empty() || put.name.chars().count() > 128 {
            return Err(DomainError::invalid_argument(
                "name",
                "a mental model needs a name of 1 to 128 characters",
            ));
        }
    } else if !put.name.is_empty() {
        return Err(DomainError::invalid_argument(
            "name",
            "only mental_model documents are named",
        ));
    }
    if put.kind == DocumentKind::ExecutiveState {
        parse_executive_state(&put.body)?;
    }
    Ok(())
}

/// A project holds at most this many mental models. Every briefing of the
/// project carries all of them, each up to 256 KiB (SPEC §3.2), so their
/// count bounds what a start reads and answers.
pub const MAX_MENTAL_MODELS: i64 = 32;

/// A new mental model for a project that holds [`MAX_MENTAL_MODELS`].
pub fn too_many_mental_models() -> DomainError {
    DomainError::invalid_argument(
        "name",
        format!(
            "names a new mental model, and the project holds the most it may ({MAX_MENTAL_MODELS}); \
             replace an existing model's body (its name is in briefing.mental_models) instead"
        ),
    )
    .with_details(json!({ "field": "name", "limit": MAX_MENTAL_MODELS }))
}

/// The refusal for a stale `expected_revision`.
pub fn document_conflict(current: Revision) -> DomainError {
    DomainError::new(
        ErrorCode::DocumentConflict,
        format!("the document is at revision {current}; read it again, merge, and write with that revision"),
    )
    .with_details(json!({ "current_revision": current }))
}

/// `executive_state` is a JSON object with `objective` (string), `missions[]` and
/// `pending_decisions[]` (strings, or objects with a `title`).
pub fn parse_executive_state(body: &str) -> Result<Value, DomainError> {
    let bad = |why: &str| DomainError::invalid_argument("body", why.to_owned());
    let v: Value =
        serde_json::from_str(body).map_err(|_| bad("executive_state must be a JSON object"))?;
    let obj = v
        .as_object()
        .ok_or_else(|| bad("executive_state must be a JSON object"))?;
    if !obj.get("objective").is_some_and(Value::is_string) {
        return Err(bad("executive_state needs objective (a string)"));
    }
    for list in ["missions", "pending_decisions"] {
        let items = obj
            .get(list)
            .and_then(Value::as_array)
            .ok_or_else(|| bad(&format!("executive_state needs {list} (an array)")))?;
        if !items.iter().all(|i| item_title(i).is_some()) {
            return Err(bad(&format!(
                "each of {list} must be a string or an object with a title"
            )));
        }
    }
    Ok(v)
}

fn item_title(v: &Value) -> Option<&str> {
    v.as_str()
        .or_else(|| v.get("title").and_then(Value::as_str))
}

/// The first `n` missions' titles, for the briefing's recall.
pub fn top_missions(executive_state: &Value, n: usize) -> Vec<String> {
    executive_state
        .get("missions")
        .and_then(Value::as_array)
        .map(|m| {
            m.iter()
                .filter_map(item_title)
                .take(n)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A recall query that matches any of the first words of `text` (ranked by
/// how many match): a mission title is a topic, not a phrase every artifact
/// must contain. At most QUERY_WORDS_MAX words: a title may be 256 KiB, and
/// matching costs a text's words times the query's (a review found a title
/// of tens of thousands of words on every session start).
pub fn any_word_query(text: &str) -> String {
    crate::search_words::words(text)
        .filter(|w| !w.eq_ignore_ascii_case("or"))
        .take(crate::search_words::QUERY_WORDS_MAX)
        .collect::<Vec<_>>()
        .join(" or ")
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecallHit {
    pub artifact: Artifact,
    pub rank: f64,
    /// Matching text with hits between « and ».
    pub snippet: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HistoryEntry {
    pub revision: Revision,
    pub body: String,
    pub session_id: SessionId,
    pub receipt_seq: i64,
    #[serde(serialize_with = "ser_time")]
    pub created_at: DateTime<Utc>,
}

/// The daily brief as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Brief {
    pub body: String,
    #[serde(serialize_with = "ser_time")]
    pub generated_at: DateTime<Utc>,
    pub stale: bool,
}

/// A brief older than this is `stale` (SPEC §5).
pub const BRIEF_STALE_HOURS: i64 = 26;

/// A recall without a query lists artifacts; each one's snippet is the start
/// of its text, this many characters, then "…".
pub const LIST_SNIPPET_CHARS: usize = 200;

/// A listed artifact's snippet: its text's first LIST_SNIPPET_CHARS
/// characters, then "…" when it goes on.
pub fn list_snippet(text: &str) -> String {
    match text.char_indices().nth(LIST_SNIPPET_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// The words of a query a hit holds, lowercased (not `or`, not excluded).
fn query_terms(query: &str) -> std::collections::HashSet<String> {
    query
        .split_whitespace()
        .filter(|t| !t.starts_with('-') && !t.eq_ignore_ascii_case("or"))
        .flat_map(|t| t.split(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether `word` is one of `wanted` (lowercased), without lowercasing a
/// copy of every word already in lower case.
fn is_term(wanted: &std::collections::HashSet<String>, word: &str) -> bool {
    if word.chars().any(char::is_uppercase) {
        wanted.contains(&word.to_lowercase())
    } else {
        wanted.contains(word)
    }
}

/// Words a search snippet shows: up to this many before the first hit, and
/// this many in all.
const SNIPPET_LEAD_WORDS: usize = 8;
const SNIPPET_WORDS: usize = 30;

/// A search hit's snippet, the same from every store: about 30 words of
/// `text` from a little before the first word of `query` it holds, each word
/// of the query marked « », "…" where the text goes on. Whole words compared
/// case-insensitively, as the stores' full-text engines match them (`or`
/// and `-excluded` words are not hits). One pass over the text: the
/// engines' own snippet functions compare every hit with every other, which
/// a text full of hits made cost seconds.
pub fn search_snippet(text: &str, query: &str) -> String {
    let wanted = query_terms(query);
    // Each word's byte range, in order.
    let mut words: Vec<(usize, usize)> = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                words.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        words.push((s, text.len()));
    }
    let hit = |&(s, e): &(usize, usize)| is_term(&wanted, &text[s..e]);
    let first = words.iter().position(hit).unwrap_or(0);
    let from = first.saturating_sub(SNIPPET_LEAD_WORDS);
    let to = (from + SNIPPET_WORDS).min(words.len());
    let (Some(&(begin, _)), Some(&(_, end))) = (words.get(from), words.get(to.wrapping_sub(1)))
    else {
        return list_snippet(text);
    };
    let mut out = String::with_capacity(end - begin + 16);
    if from > 0 {
        out.push('…');
    }
    let mut at = begin;
    for w in &words[from..to] {
        out.push_str(&text[at..w.0]);
        if hit(w) {
            out.push('«');
            out.push_str(&text[w.0..w.1]);
            out.push('»');
        } else {
            out.push_str(&text[w.0..w.1]);
        }
        at = w.1;
    }
    if to < words.len() {
        out.push('…');
    }
    out
}

impl Brief {
    /// The stored brief as the briefing shows it at `now`.
    pub fn at(body: String, generated_at: DateTime<Utc>, now: DateTime<Utc>) -> Self {
        Self {
            body,
            stale: (now - generated_at).num_hours() >= BRIEF_STALE_HOURS,
            generated_at,
        }
    }
}

/// What a day looked like in one project, as the brief's source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DayActivity {
    /// `(status, summary)` of the last [`BRIEF_SESSIONS`] sessions closed in
    /// the window, oldest first (each summary's first 200 characters).
    pub closed: Vec<(String, String)>,
    /// Sessions closed in the window, all of them.
    pub closed_total: i64,
    /// `(slot or "base", revision)` of the last [`BRIEF_FOCUS_CHANGES`] focus
    /// revisions written, oldest first.
    pub focus_changes: Vec<(String, Revision)>,
    /// Focus revisions written in the window, all of them.
    pub focus_total: i64,
    /// Artifacts created in the window, by kind.
    pub artifacts: Vec<(ArtifactKind, i64)>,
    pub open_sessions: i64,
}

/// A brief lists at most this many closed sessions (the last ones) and
/// focus revisions: the day is read, and the brief is answered in every
/// briefing, whatever a project's day held (the rest are counted).
pub const BRIEF_SESSIONS: i64 = 20;
pub const BRIEF_FOCUS_CHANGES: i64 = 50;

impl DayActivity {
    /// From a store's rows: `(status, summary)` of closed sessions, `(slot,
    /// revision)` of focus writes (`""` is the base focus), `(kind, count)`,
    /// with how many sessions and focus writes there were in all.
    pub fn from_rows(
        (closed, closed_total): (Vec<(String, Option<String>)>, i64),
        (focus, focus_total): (Vec<(String, Revision)>, i64),
        kinds: Vec<(String, i64)>,
        open_sessions: i64,
    ) -> Self {
        let slot_name = |slot: String| {
            if slot.is_empty() {
                "base".to_owned()
            } else {
                slot
            }
        };
        Self {
            closed: closed
                .into_iter()
                .map(|(s, sum)| (s, sum.unwrap_or_default()))
                .collect(),
            closed_total,
            focus_changes: focus
                .into_iter()
                .map(|(slot, rev)| (slot_name(slot), rev))
                .collect(),
            focus_total,
            artifacts: kinds
                .into_iter()
                .filter_map(|(k, n)| ArtifactKind::parse(&k).map(|k| (k, n)))
                .collect(),
            open_sessions,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.closed.is_empty() && self.focus_changes.is_empty() && self.artifacts.is_empty()
    }
}

/// The brief's text: deterministic (same activity, same text), no model calls.
pub fn daily_brief_text(project: &ProjectKey, day: NaiveDate, a: &DayActivity) -> String {
    let mut out = format!("Daily brief for {project}, {day} (last 24 h, UTC)\n");
    out.push_str(&format!(
        "Sessions closed: {}; open now: {}\n",
        a.closed_total, a.open_sessions
    ));
    let unlisted = a.closed_total - a.closed.len() as i64;
    if unlisted > 0 {
        out.push_str(&format!("- … {unlisted} earlier, not listed\n"));
    }
    for (status, summary) in &a.closed {
        let line = summary
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(200)
            .collect::<String>();
        out.push_str(&format!("- [{status}] {line}\n"));
    }
    if a.focus_changes.is_empty() {
        out.push_str("Focus: unchanged\n");
    } else {
        let changes: Vec<String> = a
            .focus_changes
            .iter()
            .map(|(slot, rev)| format!("{slot}@{rev}"))
            .collect();
        let unlisted = a.focus_total - a.focus_changes.len() as i64;
        let earlier = if unlisted > 0 {
            format!("… {unlisted} earlier, ")
        } else {
            String::new()
        };
        out.push_str(&format!(
            "Focus revisions: {earlier}{}\n",
            changes.join(", ")
        ));
    }
    let total: i64 = a.artifacts.iter().map(|(_, n)| n).sum();
    let kinds: Vec<String> = a
        .artifacts
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    out.push_str(&format!(
        "Artifacts recorded: {total}{}\n",
        if kinds.is_empty() {
            String::new()
        } else {
            format!(" ({})", kinds.join(", "))
        }
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executive_state_is_validated() {
        assert!(
            parse_executive_state(
                r#"{"objective":"ship","missions":["a",{"title":"b"}],"pending_decisions":[]}"#
            )
            .is_ok()
        );
        for bad in [
            "not json",
            "[]",
            r#"{"missions":[],"pending_decisions":[]}"#,
            r#"{"objective":"x","missions":{},"pending_decisions":[]}"#,
            r#"{"objective":"x","missions":[1],"pending_decisions":[]}"#,
            r#"{"objective":"x","missions":[]}"#,
        ] {
            let e = parse_executive_state(bad).err().map(|e| e.code);
            assert_eq!(e, Some(ErrorCode::InvalidArgument), "{bad}");
        }
    }

    #[test]
    fn mission_queries_match_any_word() {
        assert_eq!(
            any_word_query("Ledger integrity, or recall!"),
            "Ledger or integrity or recall"
        );
        assert_eq!(any_word_query("  "), "");
        let long = (0..20)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(any_word_query(&long).split(" or ").count(), 8);
    }

    #[test]
    fn top_missions_take_titles_in_order() {
        let v = serde_json::json!({"missions": ["one", {"title": "two"}, "three", "four"]});
        assert_eq!(top_missions(&v, 3), ["one", "two", "three"]);
    }

    #[test]
    fn a_brief_is_stale_after_26_hours() {
        let at = DateTime::from_timestamp(1_000_000, 0).unwrap();
        let h = |n| at + chrono::Duration::hours(n);
        assert!(!Brief::at(String::new(), at, h(25)).stale);
        assert!(Brief::at(String::new(), at, h(26)).stale);
    }

    #[test]
    fn the_brief_is_deterministic() {
        let p = ProjectKey::parse("p").unwrap();
        let day = NaiveDate::from_ymd_opt(2026, 11, 29).unwrap();
        let a = DayActivity {
            closed: vec![("ended".into(), "did x\nmore".into())],
            closed_total: 1,
            focus_changes: vec![("base".into(), 3)],
            focus_total: 1,
            artifacts: vec![(ArtifactKind::Fact, 2)],
            open_sessions: 1,
        };
        let t = daily_brief_text(&p, day, &a);
        assert_eq!(t, daily_brief_text(&p, day, &a));
        assert_eq!(
            t,
            "Daily brief for p, 2026-11-29 (last 24 h, UTC)\nSessions closed: 1; open now: 1\n- [ended] did x\nFocus revisions: base@3\nArtifacts recorded: 2 (2 fact)\n"
        );
        // A day beyond what a brief lists: counted, not listed.
        let more = DayActivity {
            closed_total: 25,
            focus_total: 60,
            ..a
        };
        assert_eq!(
            daily_brief_text(&p, day, &more),
            "Daily brief for p, 2026-11-29 (last 24 h, UTC)\nSessions closed: 25; open now: 1\n- … 24 earlier, not listed\n- [ended] did x\nFocus revisions: … 59 earlier, base@3\nArtifacts recorded: 2 (2 fact)\n"
        );
    }
}

#[cfg(test)]
mod snippet_tests {
    use super::{LIST_SNIPPET_CHARS, list_snippet, search_snippet};

    #[test]
    fn a_listed_snippet_is_the_texts_start_in_characters() {
        assert_eq!(list_snippet("short"), "short");
        let long: String = "é".repeat(LIST_SNIPPET_CHARS + 5);
        let s = list_snippet(&long);
        assert_eq!(s.chars().count(), LIST_SNIPPET_CHARS + 1);
        assert!(s.ends_with('…'));
        let exact: String = "a".repeat(LIST_SNIPPET_CHARS);
        assert_eq!(list_snippet(&exact), exact);
    }

    #[test]
    fn a_snippet_marks_the_querys_words_around_the_first_hit() {
        assert_eq!(
            search_snippet("The Ledger never forks: ledger tip", "ledger -tip"),
            "The «Ledger» never forks: «ledger» tip"
        );
        let long: String = (0..100).map(|i| format!("w{i} ")).collect::<String>() + "needle end";
        let s = search_snippet(&long, "needle or nothing");
        assert!(s.starts_with("…w92 "), "{s}");
        assert!(s.contains("«needle» end"), "{s}");
        assert!(!s.ends_with('…'), "{s}");
        let s = search_snippet(&long, "w1");
        assert!(s.starts_with("w0 «w1» w2"), "{s}");
        assert!(s.ends_with('…'), "{s}");
        assert_eq!(
            search_snippet("Ελληνικά ΚΕΊΜΕΝΑ", "κείμενα"),
            "Ελληνικά «ΚΕΊΜΕΝΑ»"
        );
        assert_eq!(search_snippet("", "x"), "");
    }
}
