//! What anyone may ask without a credential and still reaches the database:
//! `/readyz` (a ping) and `/metrics` (the store's gauges, a count across every
//! tenant). Each is asked one at a time per replica and its answer reused for
//! [`FRESH`], so a flood of either holds one pooled connection at most and
//! asks at most about once a second (before, each request was a query on the
//! shared pool, and a flood held all of it, as made-up shared tokens did).

use std::future::Future;
use std::time::Duration;

use brain_core::store::StoreStats;
use tokio::sync::Mutex;
use tokio::time::Instant;

/// How long an answer is reused.
pub const FRESH: Duration = Duration::from_secs(1);

/// The last answer to one question, and when it was had.
pub struct Recent<T> {
    held: Mutex<Option<(Instant, T)>>,
}

impl<T> Default for Recent<T> {
    fn default() -> Self {
        Self {
            held: Mutex::new(None),
        }
    }
}

impl<T: Clone> Recent<T> {
    /// The answer had less than [`FRESH`] ago, or `ask`'s. Callers that come
    /// while one asks wait for its answer instead of asking too.
    pub async fn get_or<F, Fut>(&self, ask: F) -> T
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T>,
    {
        let mut held = self.held.lock().await;
        if let Some((at, answer)) = &*held
            && at.elapsed() < FRESH
        {
            return answer.clone();
        }
        let answer = ask().await;
        *held = Some((Instant::now(), answer.clone()));
        answer
    }
}

/// The replica's two unauthenticated questions to the store.
#[derive(Default)]
pub struct Probes {
    /// `/readyz`: the ping's error, logged once per asking.
    pub ready: Recent<Result<(), String>>,
    /// `/metrics`: the store's gauges.
    pub stats: Recent<Result<StoreStats, String>>,
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_flood_asks_once_a_second() {
        let recent = Arc::new(Recent::<usize>::default());
        let asked = Arc::new(AtomicUsize::new(0));
        let ask = |recent: Arc<Recent<usize>>, asked: Arc<AtomicUsize>| async move {
            recent
                .get_or(|| async {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    asked.fetch_add(1, Ordering::SeqCst) + 1
                })
                .await
        };
        let flood: Vec<_> = (0..50)
            .map(|_| tokio::spawn(ask(recent.clone(), asked.clone())))
            .collect();
        for f in flood {
            assert_eq!(f.await.unwrap(), 1, "every caller gets the one answer");
        }
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        tokio::time::sleep(FRESH / 2).await;
        assert_eq!(ask(recent.clone(), asked.clone()).await, 1, "still fresh");
        tokio::time::sleep(FRESH).await;
        assert_eq!(ask(recent.clone(), asked.clone()).await, 2, "asked again");
    }
}
