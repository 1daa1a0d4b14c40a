//! The daily briefs, for every [`Scope`]d store: which projects are due,
//! then each one's day read and its brief written in one write transaction
//! of its tenant. `ON CONFLICT DO NOTHING` on (tenant, project, day) makes
//! the first replica's brief the only one.

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};

use super::SqlTx;
use super::{Conn, Finish, Param, Row, Scope, sessions};
use brain_core::error::StoreError;
use brain_core::ids::{ProjectKey, TenantId};
use brain_core::memory::{BRIEF_FOCUS_CHANGES, BRIEF_SESSIONS, DayActivity, daily_brief_text};
use brain_core::store::{COUNTED_UP_TO, DailyBriefs};

async fn activity<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    project: &ProjectKey,
    since: DateTime<Utc>,
) -> Result<DayActivity, StoreError> {
    let params = [tenant.into(), project.into(), since.into()];
    let sql = c.sql();
    let closed = last_of(c, sql.activity_closed, &params, BRIEF_SESSIONS, |r| {
        Ok((r.text("status")?, r.opt_text("summary")?))
    })
    .await?;
    let focus = last_of(c, sql.activity_focus, &params, BRIEF_FOCUS_CHANGES, |r| {
        Ok((r.text("slot")?, r.int("revision")?))
    })
    .await?;
    let kinds = c.fetch_all(c.sql().activity_kinds, &params).await?;
    let kinds = kinds
        .iter()
        .map(|r| Ok((r.text("kind")?, r.int("n")?)))
        .collect::<Result<_, StoreError>>()?;
    let open = sessions::open_agent_sessions(c, tenant, project, COUNTED_UP_TO).await?;
    Ok(DayActivity::from_rows(closed, focus, kinds, open))
}

/// The last `limit` rows of a day's listing (`params` and the limit), read
/// with `row`, and how many the day had in all (each row's `n`).
async fn last_of<C: Conn + ?Sized, T>(
    c: &mut C,
    sql: &str,
    params: &[Param<'_>; 3],
    limit: i64,
    row: impl Fn(&dyn Row) -> Result<T, StoreError>,
) -> Result<(Vec<T>, i64), StoreError> {
    let [tenant, project, since] = *params;
    let rows = c
        .fetch_all(sql, &[tenant, project, since, limit.into()])
        .await?;
    let total = rows.first().map(|r| r.int("n")).transpose()?.unwrap_or(0);
    let listed = rows
        .iter()
        .map(|r| row(r.as_ref()))
        .collect::<Result<_, StoreError>>()?;
    Ok((listed, total))
}

#[async_trait]
impl<S: Scope> DailyBriefs for crate::SqlStore<S> {
    async fn generate_daily_briefs(&self, now: DateTime<Utc>) -> Result<usize, StoreError> {
        let since = now - Duration::hours(24);
        let day = now.date_naive();
        let day_text = day.to_string();
        // System scope: the scheduler looks across tenants only to find
        // which projects need a brief; each is written in its tenant's scope.
        let mut c = self.system_scope().await?;
        let due = c
            .fetch_all(c.sql().briefs_due, &[since.into(), (&day_text).into()])
            .await?;
        c.finish().await?;
        let mut written = 0;
        for row in due {
            let (Ok(tenant), Ok(project)) = (
                TenantId::parse(&row.text("tenant_id")?),
                ProjectKey::parse(&row.text("project")?),
            ) else {
                continue;
            };
            let mut tx = self.write_tx(&tenant).await?;
            let a = activity(&mut tx, &tenant, &project, since).await?;
            if a.is_empty() {
                continue;
            }
            let body = daily_brief_text(&project, day, &a);
            let params = [
                (&tenant).into(),
                (&project).into(),
                (&day_text).into(),
                (&body).into(),
                now.into(),
            ];
            let done = tx.execute(tx.sql().brief_insert, &params).await?;
            tx.commit(None).await?;
            written += usize::try_from(done).unwrap_or(0);
        }
        Ok(written)
    }
}
