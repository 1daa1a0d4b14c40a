//! A call refused or failed, in one shape at every door (SPEC §2, §4): an
//! HTTP response ([`IntoResponse`]), a tool result ([`Refusal::into_tool_result`])
//! or a JSON-RPC error's data. The envelope is written here only:
//! `{"error": {"code", "message", "status", "details"}}`.

use axum::Json;
use axum::response::{IntoResponse, Response};
use brain_core::error::{DomainError, ErrorCode, StoreError};
use http::StatusCode;
use rmcp::model::{CallToolResult, ContentBlock, ErrorData};
use serde_json::{Value, json};

/// A refusal: the domain error the caller reads and, behind an `internal`,
/// the failure that caused it, which is logged where the refusal is
/// answered and never sent.
#[derive(Debug)]
pub struct Refusal {
    error: DomainError,
    /// The HTTP status where the transport's differs from the code's (a
    /// body that timed out is 408, a registry that is down 503).
    status: Option<StatusCode>,
    cause: Option<StoreError>,
}

impl Refusal {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        DomainError::new(code, message).into()
    }

    /// Answer with this HTTP status rather than the code's.
    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = Some(status);
        self
    }

    pub fn code(&self) -> ErrorCode {
        self.error.code
    }

    fn status(&self) -> StatusCode {
        self.status.unwrap_or_else(|| {
            StatusCode::from_u16(self.error.code.status())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
        })
    }

    /// The envelope every door answers with.
    pub fn envelope(&self) -> Value {
        let e = &self.error;
        let details = match &e.details {
            Value::Null => json!({}),
            d => d.clone(),
        };
        json!({"error": {
            "code": e.code.as_str(),
            "message": e.message,
            "status": self.status().as_u16(),
            "details": details,
        }})
    }

    /// Log the cause of an `internal` once, where it is answered.
    fn log(&self, at: &str) {
        if let Some(cause) = &self.cause {
            tracing::error!(at, error = %cause.chain(), "a call failed in the store");
        }
    }

    /// As a tool result: `isError`, the envelope as structured content, and
    /// a text block that starts with the code and says what to do next.
    pub fn into_tool_result(self, tool: &str) -> CallToolResult {
        self.log(tool);
        let mut r = CallToolResult::structured_error(self.envelope());
        r.content = vec![ContentBlock::text(format!(
            "{}: {}",
            self.error.code, self.error.message
        ))];
        r
    }
}

impl Refusal {
    /// As a JSON-RPC error (a call that is not a tool's: resources,
    /// subscriptions), its code the nearest JSON-RPC one and the envelope
    /// as its data.
    pub fn into_rpc_error(self, at: &str) -> ErrorData {
        self.log(at);
        let data = Some(self.envelope());
        let message = self.error.message;
        match self.error.code {
            ErrorCode::NotFound | ErrorCode::SessionNotFound => {
                ErrorData::resource_not_found(message, data)
            }
            ErrorCode::InvalidArgument => ErrorData::invalid_params(message, data),
            ErrorCode::Internal => ErrorData::internal_error(message, data),
            _ => ErrorData::invalid_request(message, data),
        }
    }
}

impl From<DomainError> for Refusal {
    fn from(error: DomainError) -> Self {
        Self {
            error,
            status: None,
            cause: None,
        }
    }
}

/// A store failure is answered as `internal`, without its text.
impl From<StoreError> for Refusal {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Domain(d) => d.into(),
            cause => Self {
                error: DomainError::internal(),
                status: None,
                cause: Some(cause),
            },
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        self.log("http");
        (self.status(), Json(self.envelope())).into_response()
    }
}
