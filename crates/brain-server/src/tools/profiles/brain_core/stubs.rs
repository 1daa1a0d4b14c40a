//! The bodies `brain_session` end writes when the agent gives none: stubs
//! built from the session's ledger; and an executive state given as JSON or
//! markdown, checked.

use brain_core::DomainError;
use brain_core::ids::SessionId;
use brain_core::memory::parse_executive_state;
use brain_core::model::{ArtifactKind, rfc3339};
use serde_json::{Value, json};

/// A body for brain's executive state: a JSON object must be a valid one
/// (refused otherwise, naming what is wrong); markdown is kept whole under
/// `body`, its first line as the objective.
pub(super) fn executive_state_body(given: &str) -> Result<String, DomainError> {
    if serde_json::from_str::<Value>(given).is_ok_and(|v| v.is_object()) {
        return parse_executive_state(given)
            .map(|_| given.to_owned())
            .map_err(|e| DomainError::invalid_argument("executive_state", e.message));
    }
    let objective = given
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_owned();
    Ok(
        json!({"objective": objective, "missions": [], "pending_decisions": [], "body": given})
            .to_string(),
    )
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    line.chars().take(120).collect()
}

/// Stub: the current executive state, with the session's decisions added to
/// the pending ones.
pub(super) fn stub_executive_state(
    current: Option<&Value>,
    ledger: &[brain_core::model::Artifact],
) -> String {
    let mut decisions: Vec<Value> = current
        .and_then(|s| s.get("pending_decisions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for a in ledger.iter().filter(|a| a.kind == ArtifactKind::Decision) {
        let d = json!(first_line(&a.text));
        if !decisions.contains(&d) {
            decisions.push(d);
        }
    }
    let objective = current
        .and_then(|s| s.get("objective"))
        .cloned()
        .unwrap_or_else(|| json!(""));
    let missions = current
        .and_then(|s| s.get("missions"))
        .cloned()
        .unwrap_or_else(|| json!([]));
    json!({"objective": objective, "missions": missions, "pending_decisions": decisions})
        .to_string()
}

fn ledger_lines(ledger: &[brain_core::model::Artifact]) -> String {
    if ledger.is_empty() {
        return "- nothing was recorded with brain_remember\n".to_owned();
    }
    ledger
        .iter()
        .map(|a| format!("- {}: {}\n", a.kind.as_str(), first_line(&a.text)))
        .collect()
}

pub(super) fn stub_critique(session: &SessionId, ledger: &[brain_core::model::Artifact]) -> String {
    format!(
        "# Session critique (stub)\n\n{session} ended without a critique. Its ledger:\n\n{}",
        ledger_lines(ledger)
    )
}

pub(super) fn stub_sync(
    session: &SessionId,
    subject: &str,
    ledger: &[brain_core::model::Artifact],
) -> String {
    format!(
        "# Sync note (stub)\n\n{subject} closed {session} at {} with {} artifacts:\n\n{}",
        rfc3339(&brain_core::model::now_micros()),
        ledger.len(),
        ledger_lines(ledger)
    )
}
