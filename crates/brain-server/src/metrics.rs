//! Prometheus metrics (`GET /metrics`), through the `metrics` facade and its
//! Prometheus exporter. Counters and histograms are recorded where things
//! happen; gauges that live in the database are read on each scrape.

use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::http::AppState;

/// Latency buckets in seconds, from 1 ms to 10 s.
const BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The process-wide recorder, installed on first use (a process has one).
pub fn handle() -> Option<&'static PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), BUCKETS)
                .ok()?;
            match builder.install_recorder() {
                Ok(h) => Some(h),
                Err(e) => {
                    tracing::warn!(error = %e, "metrics recorder not installed");
                    None
                }
            }
        })
        .as_ref()
}

/// Count and time every HTTP request by route template (never the raw path) and status.
pub async fn track_http(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    let started = Instant::now();
    let resp = next.run(req).await;
    let status = resp.status().as_u16().to_string();
    metrics::counter!("brain_http_requests_total", "route" => route.clone(), "status" => status)
        .increment(1);
    metrics::histogram!("brain_http_request_duration_seconds", "route" => route)
        .record(started.elapsed().as_secs_f64());
    resp
}

/// Record one tool call.
pub fn tool_call(tool: &str, outcome: &str, seconds: f64) {
    metrics::counter!("brain_tool_calls_total", "tool" => tool.to_owned(), "outcome" => outcome.to_owned())
        .increment(1);
    metrics::histogram!("brain_tool_call_duration_seconds", "tool" => tool.to_owned())
        .record(seconds);
}

pub async fn scrape(State(state): State<AppState>) -> Response {
    let Some(handle) = handle() else {
        return (StatusCode::SERVICE_UNAVAILABLE, "metrics are not available").into_response();
    };
    let store = state.store.clone();
    let stats = state
        .probes
        .stats
        .get_or(|| async move { store.stats().await.map_err(|e| e.to_string()) })
        .await;
    match stats {
        Ok(s) => {
            metrics::gauge!("brain_open_sessions").set(s.open_sessions as f64);
            metrics::gauge!("brain_open_mcp_connections").set(s.open_connections as f64);
            metrics::gauge!("brain_db_pool_connections").set(f64::from(s.pool_size));
            metrics::gauge!("brain_db_pool_idle_connections").set(f64::from(s.pool_idle));
            // No label per tenant: how many are near the quota, and the largest.
            metrics::gauge!("brain_tenants_near_quota").set(s.tenants_near_quota as f64);
            metrics::gauge!("brain_tenant_usage_max_bytes").set(s.largest_usage_bytes as f64);
            metrics::gauge!("brain_tenant_quota_bytes").set(s.quota_bytes as f64);
            if let Some(m) = s.focus_memory {
                metrics::counter!("brain_focus_memory_hits_total").absolute(m.hits);
                metrics::counter!("brain_focus_memory_misses_total").absolute(m.misses);
                metrics::gauge!("brain_focus_memory_projects").set(m.projects as f64);
                metrics::gauge!("brain_focus_memory_bytes").set(m.bytes as f64);
            }
        }
        Err(e) => tracing::warn!(error = %e, "store gauges unavailable for this scrape"),
    }
    handle.run_upkeep();
    let mut resp = handle.render().into_response();
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    resp
}
