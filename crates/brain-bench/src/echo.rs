//! The baseline: a bare rmcp server, the same Streamable HTTP transport and
//! session manager brain uses, with a tool that answers its argument (`echo`)
//! and one that answers what `brain_focus_get` answers brain-bench, from
//! memory (`focus`: the same fields, a 2 KB body, as structured content and
//! its text). What brain costs beyond them is brain's own.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};

#[derive(Clone)]
struct Echo {
    // Built once: the macro's default would rebuild the router on every call.
    router: Arc<ToolRouter<Self>>,
    body: Arc<String>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// Any text; answered as is.
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct FocusArgs {
    /// Any project name; every project has the same body.
    #[allow(dead_code)]
    project: String,
}

#[tool_router]
impl Echo {
    #[tool(description = "Answer the text given")]
    async fn echo(&self, Parameters(a): Parameters<EchoArgs>) -> String {
        a.text
    }

    #[tool(description = "Answer a focus body as brain_focus_get does, from memory")]
    async fn focus(&self, Parameters(_): Parameters<FocusArgs>) -> CallToolResult {
        CallToolResult::structured(serde_json::json!({
            "body": self.body.as_str(),
            "revision": 54,
            "slots": [],
            "updated_at": "2026-12-04T17:35:31.416214Z",
            "updated_by_session": "sess_5de275b25ace4239a968896fdc87724c",
        }))
    }
}

#[tool_handler(router = self.router)]
impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

pub async fn serve(listen: &str) -> anyhow::Result<()> {
    let echo = Echo {
        router: Arc::new(Echo::tool_router()),
        body: Arc::new(crate::load::body(0)),
    };
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins();
    let svc = StreamableHttpService::new(
        move || Ok(echo.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let app = axum::Router::new().route_service("/mcp", svc);
    let listener = tokio::net::TcpListener::bind(listen).await?;
    eprintln!("echo baseline listening on {}", listener.local_addr()?);
    // As brain's own accept loop does: without TCP_NODELAY every answer waits
    // on the peer's delayed ACK (~40 ms), and the baseline measures that.
    let listener = axum::serve::ListenerExt::tap_io(listener, |s| {
        let _ = s.set_nodelay(true);
    });
    axum::serve(listener, app).await?;
    Ok(())
}
