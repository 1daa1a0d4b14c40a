//! The behaviour story every store must pass, on the store in memory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use brain_core::store::{Store, StoreSettings};
use brain_store_memory::MemoryStore;

async fn memory() -> (Arc<dyn Store>, ()) {
    let s = StoreSettings::default();
    (
        Arc::new(MemoryStore::new(s.idle_secs, s.connection_idle_secs)),
        (),
    )
}

brain_testkit::store_story!(memory());
