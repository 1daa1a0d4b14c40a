//! Recall (SPEC §2.8) for every SQL store: one statement, a search or a
//! listing, with the same eleven parameters on both (a search, too, ranks
//! only the window of artifacts past its cursor). PostgreSQL matches with
//! its text search (`websearch_to_tsquery` of the query as given); SQLite
//! hands over the window and brain matches it ([`search_words::Query`]); a
//! hit's snippet is made here, the same for both.

use super::{Conn, Param, Row, rows};
use brain_core::error::StoreError;
use brain_core::ids::{ArtifactId, TenantId};
use brain_core::memory::{RecallHit, list_snippet, search_snippet};
use brain_core::model::Artifact;
use brain_core::search_words;
use brain_core::store::{RecallQuery, SEARCH_WINDOW_BYTES};
use chrono::{DateTime, Utc};

pub async fn recall<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    q: &RecallQuery,
) -> Result<Vec<RecallHit>, StoreError> {
    let (sql, terms) = match &q.query {
        Some(text) => (c.sql().recall_search, text.clone()),
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
            let window = found
                .iter()
                .map(|r| rows::artifact(r.as_ref()))
                .collect::<Result<_, _>>()?;
            Ok(ranked_page(window, query, q))
        }
        _ => found
            .iter()
            .map(|r| hit(r.as_ref(), q.query.as_deref()))
            .collect(),
    }
}

/// The window's artifacts that match `query`, ranked as the SQL that ranks
/// does: by the query's words a text holds, relative to the best (1 for all
/// when none holds any), best first, then newest, then by id; the page at
/// `q`'s offset. brain matches them itself ([`search_words::Query`]): a
/// full-text index also reads the rows of other projects between the
/// window's (3 s of CPU a search, measured on SQLite's), where a pass over
/// the window's at most 1 MiB of text costs milliseconds.
fn ranked_page(window: Vec<Artifact>, query: &str, q: &RecallQuery) -> Vec<RecallHit> {
    let Some(parsed) = search_words::Query::parse(query) else {
        return Vec::new();
    };
    let mut counted: Vec<(usize, Artifact)> = window
        .into_iter()
        .filter_map(|a| parsed.matches(&a.text).map(|found| (found.hits, a)))
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
