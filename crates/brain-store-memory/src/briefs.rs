//! The daily briefs in memory: each active project's day, written once.

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};

use brain_core::error::StoreError;
use brain_core::ids::ProjectKey;
use brain_core::memory::{
    BRIEF_FOCUS_CHANGES, BRIEF_SESSIONS, Brief, DayActivity, daily_brief_text,
};
use brain_core::store::DailyBriefs;

use crate::MemoryStore;
use crate::tables::Tables;

/// What the day (since `since`) held in one project, as the brief's source.
fn day_of(t: &Tables, project: &ProjectKey, since: DateTime<Utc>) -> DayActivity {
    let last = |mut rows: Vec<(DateTime<Utc>, String, String)>, n: i64| {
        rows.sort();
        let total = i64::try_from(rows.len()).unwrap_or(i64::MAX);
        let keep = usize::try_from(n).unwrap_or(0);
        let skip = rows.len().saturating_sub(keep);
        (rows.into_iter().skip(skip).collect::<Vec<_>>(), total)
    };
    let closed: Vec<_> = t
        .sessions
        .values()
        .map(|(s, _)| s)
        .filter(|s| &s.project == project && s.kind == brain_core::model::SessionKind::Agent)
        .filter_map(|s| {
            let at = s.ended_at.filter(|at| *at >= since)?;
            let summary: String = s
                .summary
                .as_deref()
                .unwrap_or("")
                .chars()
                .take(200)
                .collect();
            Some((
                at,
                s.session_id.to_string(),
                format!("{}\u{0}{summary}", s.status.as_str()),
            ))
        })
        .collect();
    let (closed, closed_total) = last(closed, BRIEF_SESSIONS);
    let closed = closed
        .into_iter()
        .map(|(_, _, s)| {
            let (status, summary) = s.split_once('\u{0}').unwrap_or((&s, ""));
            (
                status.to_owned(),
                Some(summary.to_owned()).filter(|s| !s.is_empty()),
            )
        })
        .collect();
    let changes: Vec<_> = t
        .history
        .iter()
        .filter(|(((p, _), _), h)| p == project && h.created_at >= since)
        .map(|(((_, slot), revision), h)| (h.created_at, slot.clone(), format!("{revision:020}")))
        .collect();
    let (changes, focus_total) = last(changes, BRIEF_FOCUS_CHANGES);
    let changes = changes
        .into_iter()
        .map(|(_, slot, rev)| (slot, rev.parse().unwrap_or(0)))
        .collect();
    let mut kinds = std::collections::BTreeMap::<String, i64>::new();
    for a in t
        .artifacts
        .iter()
        .filter(|a| &a.project == project && a.created_at >= since)
    {
        *kinds.entry(a.kind.as_str().to_owned()).or_default() += 1;
    }
    DayActivity::from_rows(
        (closed, closed_total),
        (changes, focus_total),
        kinds.into_iter().collect(),
        t.open_agent_sessions(project, brain_core::store::COUNTED_UP_TO),
    )
}

#[async_trait]
impl DailyBriefs for MemoryStore {
    /// Every project active since a day ago with no brief today gets one,
    /// written under the store's lock, so racing calls write it once.
    async fn generate_daily_briefs(&self, now: DateTime<Utc>) -> Result<usize, StoreError> {
        let since = now - Duration::hours(24);
        let day = now.date_naive();
        let mut all = self.tenants.lock().await;
        let mut written = 0;
        for t in all.values_mut() {
            for project in t.projects.clone() {
                let key = (project.clone(), day.to_string());
                if t.briefs.contains_key(&key) {
                    continue;
                }
                let agent = brain_core::model::SessionKind::Agent;
                let active = t.sessions.values().any(|(s, _)| {
                    s.project == project && s.kind == agent && s.last_activity_at >= since
                }) || t
                    .artifacts
                    .iter()
                    .any(|a| a.project == project && a.created_at >= since);
                let day_held = day_of(t, &project, since);
                if !active || day_held.is_empty() {
                    continue;
                }
                let body = daily_brief_text(&project, day, &day_held);
                t.briefs.insert(key, Brief::at(body, now, now));
                written += 1;
            }
        }
        Ok(written)
    }
}
