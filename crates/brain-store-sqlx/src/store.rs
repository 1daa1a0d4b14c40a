//! A SQL store's [`Scope`] as a `brain_core` store: the session calls run
//! `brain_core::flow` on its [`SqlTx`] transactions, and the reads are
//! [`crate::sql`]'s.

use std::ops::Deref;

use async_trait::async_trait;
use brain_core::error::StoreError;
use brain_core::feed::FocusListener;
use brain_core::ids::TenantId;
use brain_core::store::{Store, StoreSettings};
use brain_core::writes::Backend;
use serde_json::Value;

use crate::sql::{Scope, SqlWrite};

/// A [`Scope`] (PostgreSQL's, SQLite's) as a `brain_core::store::Store`;
/// it derefs to the scope, so a store's own methods stay at hand.
#[derive(Clone)]
pub struct SqlStore<S>(pub S);

impl<S> SqlStore<S> {
    pub fn new(scope: S) -> Self {
        Self(scope)
    }
}

/// A scope that opens itself from a database URL.
#[async_trait]
pub trait Open: Sized {
    async fn open(url: &str, settings: StoreSettings) -> Result<Self, StoreError>;
}

impl<S: Open> SqlStore<S> {
    /// Connect to the database at `url` (its migrations are not applied).
    pub async fn connect(url: &str, settings: StoreSettings) -> Result<Self, StoreError> {
        S::open(url, settings).await.map(Self)
    }
}

impl<S> Deref for SqlStore<S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.0
    }
}

#[async_trait]
impl<S: Scope> Backend for SqlStore<S> {
    type Tx = SqlWrite<S::Tx>;

    async fn write(&self, tenant: &TenantId) -> Result<Self::Tx, StoreError> {
        Ok(SqlWrite(self.0.write_tx(tenant).await?))
    }
    fn idle_secs(&self) -> i64 {
        self.0.settings().idle_secs
    }
    fn connection_idle_secs(&self) -> i64 {
        self.0.settings().connection_idle_secs
    }
    fn announce_close(&self, tenant: &TenantId, out: &Value) {
        self.0.announce_close(tenant, out);
    }
}

#[async_trait]
impl<S: Scope> Store for SqlStore<S> {
    async fn close(&self) {
        self.0.close().await;
    }
    async fn watch_focus(&self, listener: FocusListener) -> Result<(), StoreError> {
        self.0.watch_focus(listener).await
    }
}
