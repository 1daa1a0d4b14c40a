//! A store's refusal, completed before it is answered (the tool result
//! itself is [`crate::refusal::Refusal`]'s).

use brain_core::error::{DomainError, ErrorCode, StoreError};
use brain_core::ids::TenantId;
use brain_core::store::Store;

/// A quota refusal whose store could not say the usage (SQLite's trigger
/// raises a fixed text) gets it from a read after the rollback.
pub async fn with_usage(store: &dyn Store, tenant: &TenantId, e: StoreError) -> StoreError {
    match e {
        StoreError::Domain(d)
            if d.code == ErrorCode::QuotaExceeded
                && d.details["quota"] == "bytes"
                && d.details["usage"].is_null() =>
        {
            match store.tenant_usage(tenant).await {
                Ok(u) => StoreError::Domain(DomainError::quota_exceeded(
                    Some(u.bytes),
                    Some(u.quota_bytes),
                )),
                Err(_) => StoreError::Domain(d),
            }
        }
        other => other,
    }
}
