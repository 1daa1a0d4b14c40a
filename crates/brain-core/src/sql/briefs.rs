//! The daily briefs, for every [`Scope`]d store: which projects are due,
//! then each one's day read and its brief written in one write transaction
//! of its tenant. `ON CONFLICT DO NOTHING` on (tenant, project, day) makes
//! the first replica's brief the only one.

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};

use super::{Conn, Finish, Scope, sessions};
use crate::error::StoreError;
use crate::flow::CloseTx;
use crate::ids::{ProjectKey, TenantId};
use crate::memory::{BRIEF_FOCUS_CHANGES, BRIEF_SESSIONS, DayActivity, daily_brief_text};
use crate::store::DailyBriefs;

async fn activity<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    project: &ProjectKey,
    since: DateTime<Utc>,
) -> Result<DayActivity, StoreError> {
    let params = [tenant.into(), project.into(), since.into()];
    let listed = [
        tenant.into(),
        project.into(),
        since.into(),
        BRIEF_SESSIONS.into(),
    ];
    let rows = c.fetch_all(c.sql().activity_closed, &listed).await?;
    let closed = rows
        .iter()
        .map(|r| Ok((r.text("status")?, r.opt_text("summary")?)))
        .collect::<Result<_, StoreError>>()?;
    let closed_total = rows.first().map(|r| r.int("n")).transpose()?.unwrap_or(0);
    let listed = [
        tenant.into(),
        project.into(),
        since.into(),
        BRIEF_FOCUS_CHANGES.into(),
    ];
    let rows = c.fetch_all(c.sql().activity_focus, &listed).await?;
    let focus = rows
        .iter()
        .map(|r| Ok((r.text("slot")?, r.int("revision")?)))
        .collect::<Result<_, StoreError>>()?;
    let focus_total = rows.first().map(|r| r.int("n")).transpose()?.unwrap_or(0);
    let kinds = c.fetch_all(c.sql().activity_kinds, &params).await?;
    let kinds = kinds
        .iter()
        .map(|r| Ok((r.text("kind")?, r.int("n")?)))
        .collect::<Result<_, StoreError>>()?;
    let open = sessions::open_agent_sessions(c, tenant, project).await?;
    Ok(DayActivity::from_rows(
        (closed, closed_total),
        (focus, focus_total),
        kinds,
        open,
    ))
}

#[async_trait]
impl<S: Scope> DailyBriefs for S {
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
            let mut tx = self.write(&tenant).await?;
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
            tx.commit().await?;
            written += usize::try_from(done).unwrap_or(0);
        }
        Ok(written)
    }
}
