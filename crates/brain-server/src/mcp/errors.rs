//! The one place where domain and store errors become tool results.

use brain_core::error::{DomainError, ErrorCode, StoreError};
use brain_core::ids::TenantId;
use brain_core::store::Store;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

/// SPEC §2: `isError: true`, `structuredContent.error {code, message, status, details}`,
/// and a text block that starts with the code and says what to do next.
pub fn tool_error(e: &DomainError) -> CallToolResult {
    let mut r = CallToolResult::structured_error(json!({
        "error": {
            "code": e.code.as_str(),
            "message": e.message,
            "status": e.code.status(),
            "details": e.details,
        }
    }));
    r.content = vec![ContentBlock::text(format!("{}: {}", e.code, e.message))];
    r
}

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

/// Backend failures are logged here and answered as `internal`, without their text.
pub fn store_error(tool: &str, e: StoreError) -> CallToolResult {
    match e {
        StoreError::Domain(d) => tool_error(&d),
        StoreError::Backend(detail) => {
            tracing::error!(tool, error = %detail, "tool failed in the store");
            tool_error(&DomainError::internal())
        }
        // Answered inside the store's end; reaching here is a bug.
        StoreError::MergeNeeded(_) => {
            tracing::error!(tool, "a merge stop left the store");
            tool_error(&DomainError::internal())
        }
    }
}
