//! The daily-brief scheduler: every interval, write today's brief (UTC) for
//! each project active in the last 24 h that has none. Every replica runs it;
//! the database decides which one writes a given day's brief.

use std::sync::Arc;
use std::time::Duration;

use brain_core::store::Store;
use tokio_util::sync::CancellationToken;

pub async fn schedule(store: Arc<dyn Store>, every: Duration, stop: CancellationToken) {
    loop {
        match store.generate_daily_briefs(chrono::Utc::now()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(briefs = n, "daily briefs written"),
            Err(e) => tracing::warn!(error = %e, "daily briefs not written this round"),
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
    }
}
