//! Recall over a tenant's artifacts in memory: matched as the SQLite store
//! matches ([`brain_core::search_words::Query`], web-search syntax as
//! PostgreSQL's `websearch_to_tsquery('simple', …)` reads it), ranked by
//! matches per word of the text relative to the best hit, the snippet
//! brain_core's `search_snippet`.

use brain_core::memory::{RecallHit, list_snippet};
use brain_core::model::{Artifact, ArtifactKind};
use brain_core::store::{LISTING_WINDOW, RecallQuery, SEARCH_WINDOW_BYTES};

fn wanted(q: &RecallQuery, a: &Artifact) -> bool {
    a.project == q.project
        && (!q.inbox || (a.kind == ArtifactKind::Todo && a.acknowledged_at.is_none()))
        && (q.session_id.is_none() || a.session_id == q.session_id)
        && (q.kinds.is_empty() || q.kinds.contains(&a.kind))
        && q.tags.iter().all(|t| a.tags.contains(t))
}

/// The window past the cursor, newest first, as the SQL stores read it (a
/// search ranks within it, a filtered listing filters within it; an
/// unfiltered listing is not cut: `cut` false), and whether the project
/// goes on past it.
fn window<'a>(
    artifacts: impl Iterator<Item = &'a Artifact>,
    q: &RecallQuery,
    cut: bool,
) -> (Vec<&'a Artifact>, bool) {
    let mut listed: Vec<&Artifact> = artifacts
        .filter(|a| a.project == q.project)
        .filter(|a| q.before.is_none_or(|b| (a.created_at, a.artifact_id) < b))
        .collect();
    listed.sort_by_key(|a| std::cmp::Reverse((a.created_at, a.artifact_id)));
    if !cut {
        return (listed, false);
    }
    let past = listed.len() >= usize::try_from(LISTING_WINDOW).unwrap_or(usize::MAX);
    listed.truncate(usize::try_from(LISTING_WINDOW).unwrap_or(usize::MAX));
    if q.query.is_some() {
        // The newest until their texts pass the budget, that one included.
        let mut upto = 0i64;
        let inside = listed
            .iter()
            .take_while(|a| {
                let before = upto;
                upto += i64::try_from(a.text.len()).unwrap_or(i64::MAX);
                before < SEARCH_WINDOW_BYTES
            })
            .count();
        let cut = inside < listed.len();
        listed.truncate(inside);
        return (listed, past || cut);
    }
    (listed, past)
}

/// Where `q`'s window ends when the project goes on past it: its oldest.
pub fn window_end<'a>(
    artifacts: impl Iterator<Item = &'a Artifact>,
    q: &RecallQuery,
) -> Option<(chrono::DateTime<chrono::Utc>, brain_core::ids::ArtifactId)> {
    match window(artifacts, q, true) {
        (listed, true) => listed.last().map(|a| (a.created_at, a.artifact_id)),
        _ => None,
    }
}

/// A search (best first) or, without a query, a listing (newest first,
/// after `before`).
pub fn recall<'a>(
    artifacts: impl Iterator<Item = &'a Artifact>,
    q: &RecallQuery,
) -> Vec<RecallHit> {
    let (listed, _) = window(artifacts, q, q.filtered() || q.query.is_some());
    let mut hits: Vec<RecallHit> = match &q.query {
        None => listed
            .into_iter()
            .filter(|a| wanted(q, a))
            .map(|a| RecallHit {
                artifact: a.clone(),
                rank: 1.0,
                snippet: list_snippet(&a.text),
            })
            .collect(),
        Some(text) => {
            let Some(parsed) = brain_core::search_words::Query::parse(text) else {
                return Vec::new();
            };
            listed
                .into_iter()
                .filter(|a| wanted(q, a))
                .filter_map(|a| {
                    let found = parsed.matches(&a.text)?;
                    let rank = found.hits as f64 / found.words.max(1) as f64;
                    let snippet = brain_core::memory::search_snippet(&a.text, text);
                    Some(RecallHit {
                        artifact: a.clone(),
                        rank,
                        snippet,
                    })
                })
                .collect()
        }
    };
    let best = hits.iter().map(|h| h.rank).fold(0.0_f64, f64::max);
    if best > 0.0 {
        for h in &mut hits {
            h.rank /= best;
        }
    }
    hits.sort_by(|a, b| {
        b.rank
            .total_cmp(&a.rank)
            .then(b.artifact.created_at.cmp(&a.artifact.created_at))
            .then(match q.query {
                Some(_) => a.artifact.artifact_id.cmp(&b.artifact.artifact_id),
                None => b.artifact.artifact_id.cmp(&a.artifact.artifact_id),
            })
    });
    let skip = usize::try_from(q.offset).unwrap_or(0);
    let take = usize::try_from(q.limit).unwrap_or(0);
    hits.into_iter().skip(skip).take(take).collect()
}
