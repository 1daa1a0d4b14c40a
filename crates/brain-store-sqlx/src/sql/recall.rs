//! Recall (SPEC §2.8) for every SQL store: one statement, a search or a
//! listing, with the same eleven parameters on both (a search, too, ranks
//! only the window of artifacts past its cursor). Each store's full-text
//! engine is its own (PostgreSQL's `websearch_to_tsquery`, SQLite's FTS5
//! behind [`Conn::search_terms`]); a hit's snippet is made here, the same
//! for both.

use super::{Conn, Param, Row, rows};
use brain_core::error::StoreError;
use brain_core::ids::{ArtifactId, TenantId};
use brain_core::memory::{RecallHit, list_snippet, search_hits, search_snippet};
use brain_core::model::Artifact;
use brain_core::store::{RecallQuery, SEARCH_WINDOW_BYTES};
use chrono::{DateTime, Utc};

pub async fn recall<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    q: &RecallQuery,
) -> Result<Vec<RecallHit>, StoreError> {
    let (sql, terms) = match &q.query {
        Some(text) => match c.search_terms(text) {
            Some(terms) => (c.sql().recall_search, terms),
            // Nothing searchable (only punctuation): nothing matches.
            None => return Ok(Vec::new()),
        },
        None if q.filtered() => (c.sql().recall_list_window, String::new()),
        None => (c.sql().recall_list, String::new()),
    };
    let kinds: Vec<String> = q.kinds.iter().map(|k| k.as_str().to_owned()).collect();
    let mut params: Vec<Param> = vec![
        tenant.into(),
        (&q.project).into(),
        (&terms).into(),
        kinds.as_slice().into(),
        q.limit.into(),
        q.offset.into(),
        q.tags.as_slice().into(),
        q.inbox.into(),
        q.session_id.into(),
        q.before.map(|(at, _)| at).into(),
        Param::Uuid(q.before.map(|(_, id)| id.as_uuid())),
    ];
    if q.query.is_some() {
        params.push(SEARCH_WINDOW_BYTES.into());
    }
    let found = c.fetch_all(sql, &params).await?;
    match &q.query {
        Some(query) if !c.sql().recall_search_ranks => {
            let matches = found
                .iter()
                .map(|r| rows::artifact(r.as_ref()))
                .collect::<Result<_, _>>()?;
            Ok(ranked_page(matches, query, q))
        }
        _ => found
            .iter()
            .map(|r| hit(r.as_ref(), q.query.as_deref()))
            .collect(),
    }
}

/// The window's matches ranked as the SQL that ranks does: by the query's
/// words a text holds, relative to the best (1 for all when none holds
/// any), best first, then newest, then by id; the page at `q`'s offset.
fn ranked_page(matches: Vec<Artifact>, query: &str, q: &RecallQuery) -> Vec<RecallHit> {
    let mut counted: Vec<(usize, Artifact)> = matches
        .into_iter()
        .map(|a| (search_hits(&a.text, query), a))
        .collect();
    let best = counted.iter().map(|(n, _)| *n).max().unwrap_or(0);
    counted.sort_by(|(n, a), (m, b)| {
        m.cmp(n)
            .then(b.created_at.cmp(&a.created_at))
            .then(a.artifact_id.cmp(&b.artifact_id))
    });
    let skip = usize::try_from(q.offset).unwrap_or(0);
    let take = usize::try_from(q.limit).unwrap_or(0);
    counted
        .into_iter()
        .skip(skip)
        .take(take)
        .map(|(n, artifact)| RecallHit {
            rank: if best == 0 {
                1.0
            } else {
                n as f64 / best as f64
            },
            snippet: search_snippet(&artifact.text, query),
            artifact,
        })
        .collect()
}

/// Where `q`'s window ends, if the project goes on past it
/// ([`brain_core::store::Reads::recall_window_end`]).
pub async fn window_end<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    q: &RecallQuery,
) -> Result<Option<(DateTime<Utc>, ArtifactId)>, StoreError> {
    let bytes: Option<i64> = q.query.is_some().then_some(SEARCH_WINDOW_BYTES);
    let params: Vec<Param> = vec![
        tenant.into(),
        (&q.project).into(),
        q.before.map(|(at, _)| at).into(),
        Param::Uuid(q.before.map(|(_, id)| id.as_uuid())),
        bytes.into(),
    ];
    let found = c.fetch_optional(c.sql().recall_window_end, &params).await?;
    found
        .map(|r| {
            Ok((
                r.time("created_at")?,
                ArtifactId::from_uuid(r.uuid("artifact_id")?),
            ))
        })
        .transpose()
}

fn hit(r: &dyn Row, query: Option<&str>) -> Result<RecallHit, StoreError> {
    let artifact = rows::artifact(r)?;
    let (rank, snippet) = match query {
        None => (1.0, list_snippet(&artifact.text)),
        // A best match of rank 0 (all ranks 0) has no ratio: every hit is 1.
        Some(query) => (
            r.opt_real("rank")?.unwrap_or(1.0),
            search_snippet(&artifact.text, query),
        ),
    };
    Ok(RecallHit {
        artifact,
        rank,
        snippet,
    })
}
