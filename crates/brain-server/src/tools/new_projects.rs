//! Whether a start or a remember creates its project, so its answer can say
//! so (`created_project`): a new name creates a project, and a mistyped name
//! would otherwise start an empty one without a word.
//!
//! The store is asked once per project per handler (a project's base focus
//! exists from its first write), then the answer is remembered: projects are
//! deleted only by an operator, and a replica that saw one before it was
//! deleted says `false` when it is created again. Two calls racing to create
//! the same project may both say `true`.

use std::collections::HashSet;
use std::sync::Mutex;

use brain_core::error::StoreError;
use brain_core::ids::ProjectKey;

use super::ToolCtx;

/// Projects known to exist, by tenant; forgotten all at once when this many
/// are held, so memory stays bounded whatever the callers name.
const MAX_KNOWN: usize = 100_000;

/// The projects a handler has seen written.
#[derive(Default)]
pub struct KnownProjects(Mutex<HashSet<(String, String)>>);

fn key(ctx: &ToolCtx<'_>, project: &ProjectKey) -> (String, String) {
    (
        ctx.caller.tenant.as_str().to_owned(),
        project.as_str().to_owned(),
    )
}

/// Whether `project` existed before this call's write.
pub async fn existed(ctx: &ToolCtx<'_>, project: &ProjectKey) -> Result<bool, StoreError> {
    let seen = ctx.known.is_some_and(|k| {
        k.0.lock()
            .map(|s| s.contains(&key(ctx, project)))
            .unwrap_or(false)
    });
    if seen {
        return Ok(true);
    }
    ctx.store
        .focus_exists(&ctx.caller.tenant, project, None)
        .await
}

/// `project` exists now (its write committed).
pub fn note(ctx: &ToolCtx<'_>, project: &ProjectKey) {
    let Some(known) = ctx.known else { return };
    if let Ok(mut s) = known.0.lock() {
        if s.len() >= MAX_KNOWN {
            s.clear();
        }
        s.insert(key(ctx, project));
    }
}
