//! brain's MCP tools: one module per tool, each holding its definition (name,
//! title, description, schemas, annotations) as data beside its handler.

use std::sync::Arc;

use brain_core::error::StoreError;
use brain_core::model::Caller;
use brain_core::store::Store;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde_json::Value;

pub mod document_get;
mod document_put;
pub mod focus_get;
pub mod focus_history;
pub mod new_projects;
pub mod profiles;
mod project_list;
mod recall;
pub mod receipts;
pub mod remember;
mod session_abandon;
mod session_bind;
mod session_end;
mod session_get;
pub mod session_list;
mod session_relay;
mod session_resume;
mod session_start;
mod todo_ack;

/// What a tool handler gets: the store and who is calling.
pub struct ToolCtx<'a> {
    pub store: &'a dyn Store,
    pub caller: Caller,
    /// Projects this handler has seen written (`created_project`); None: ask the store.
    pub known: Option<&'a new_projects::KnownProjects>,
}

pub type ToolResult = Result<Value, StoreError>;

/// What a tool answers: its result, or a refusal in a seed profile's own
/// envelope (answered as a tool error, `isError`, with the envelope as its
/// structured content). brain's own refusals are `Err`s, rendered by
/// [`crate::refusal::Refusal`].
#[derive(Debug)]
pub enum Answer {
    Done(Value),
    Refused(SeedRefusal),
}

/// A seed profile's refusal: its code and one-line summary, and the whole
/// envelope the seed defines.
#[derive(Debug)]
pub struct SeedRefusal {
    pub code: String,
    pub summary: String,
    pub envelope: Value,
}

/// A handler's result as an [`Answer`]: brain's tools answer a value, the
/// seed profiles an [`Answer`] of their own.
pub trait IntoAnswer {
    fn into_answer(self) -> Result<Answer, StoreError>;
}

impl IntoAnswer for ToolResult {
    fn into_answer(self) -> Result<Answer, StoreError> {
        self.map(Answer::Done)
    }
}

impl IntoAnswer for Result<Answer, StoreError> {
    fn into_answer(self) -> Result<Answer, StoreError> {
        self
    }
}

/// Serialize a typed outcome as the tool's structured result.
pub fn to_result<T: serde::Serialize>(v: &T) -> ToolResult {
    serde_json::to_value(v).map_err(StoreError::backend)
}

/// Annotations are part of the definition and must be true (TOOL_STYLE.md).
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
}

pub fn define<A: JsonSchema + 'static>(
    name: &'static str,
    title: &str,
    description: &'static str,
    output: Arc<JsonObject>,
    hints: Hints,
) -> Tool {
    let input = rmcp::handler::server::common::schema_for_input::<A>().unwrap_or_else(|e| {
        tracing::error!(tool = name, error = %e, "input schema is not an object");
        rmcp::handler::server::common::schema_for_empty_input()
    });
    let input = Arc::new(constrained(name, hints.read_only, (*input).clone()));
    let mut output = (*output).clone();
    output
        .values_mut()
        .filter(|v| v.is_object())
        .for_each(without_required);
    Tool::new(name, description, input)
        .with_title(title)
        .with_raw_output_schema(Arc::new(output))
        .with_annotations(
            // The title is the tool's own field; annotations need not repeat it.
            ToolAnnotations::new()
                .read_only(hints.read_only)
                .destructive(hints.destructive)
                .idempotent(hints.idempotent)
                .open_world(false),
        )
}

/// Remove `required` from the objects nested in an output schema (the top
/// level's, which tells a result from a refusal, stays). Every field a nested
/// object lists is present in every result, null when empty, but for the few
/// the instructions name: the rule is said there once instead of in ~1,900
/// bytes of lists that every model reads on every connection.
fn without_required(v: &mut Value) {
    match v {
        Value::Object(o) => {
            o.remove("required");
            o.values_mut().for_each(without_required);
        }
        Value::Array(a) => a.iter_mut().for_each(without_required),
        _ => {}
    }
}

/// Page sizes per tool: `(default, max)`, as the handlers enforce them.
const PAGES: &[(&str, i64, i64)] = &[
    ("brain_focus_history", 10, 50),
    ("brain_project_list", 50, 100),
    ("brain_recall", 10, 50),
    ("brain_receipts", 50, 100),
    ("brain_session_list", 20, 50),
];

/// The limits the handlers enforce, written into the input schema as JSON
/// Schema keywords so clients can validate before calling (SPEC §3.2). Keyed
/// by property name: one table, the same meaning wherever a name appears.
///
/// A read's `project` and `session_id` name something that already exists, and
/// a malformed one is refused like an unknown one: their patterns are written
/// only where a call creates or writes (tools/list's budget is better spent on
/// words there).
fn constraint(tool: &str, read_only: bool, property: &str) -> Option<Value> {
    use brain_core::requests::limits;
    if read_only && matches!(property, "project" | "session_id") {
        return None;
    }
    // The form brain hands out. The server also takes an id's hyphenated UUID
    // spelling, but no answer ever shows one, so the schema names only this.
    let id = "^sess_[0-9a-f]{32}$";
    Some(match property {
        "project" => {
            serde_json::json!({"pattern": "^[A-Za-z0-9_./-]{1,128}$"})
        }
        "slot" => {
            serde_json::json!({"pattern": "^[A-Za-z0-9_./-]{1,64}$"})
        }
        "session_id" | "id" => serde_json::json!({"pattern": id}),
        "client_key" | "expected_client_key" | "to_client_key" => {
            serde_json::json!({"maxLength": limits::CLIENT_KEY_MAX_CHARS})
        }
        "summary" => serde_json::json!({"maxLength": limits::SUMMARY_MAX_BYTES}),
        "next_focus" | "body" | "executive_state" | "critique" | "sync" => {
            serde_json::json!({"maxLength": limits::FOCUS_MAX_BYTES})
        }
        "reason" | "nothing_to_capture_reason" | "note" => {
            serde_json::json!({"maxLength": limits::REASON_MAX_BYTES})
        }
        "name" => serde_json::json!({"maxLength": 128}),
        "prefix" => serde_json::json!({"pattern": "^[A-Za-z0-9_./-]{0,128}$"}),
        "text" => serde_json::json!({"maxLength": limits::ARTIFACT_TEXT_MAX_BYTES}),
        "query" => serde_json::json!({"maxLength": 1000}),
        "tags" => serde_json::json!({"maxItems": limits::TAGS_MAX,
            "items": {"type": "string", "maxLength": limits::TAG_MAX_CHARS}}),
        "artifact_ids" => serde_json::json!({"minItems": 1, "maxItems": 50,
            "items": {"type": "string", "pattern": "^art_[0-9a-f]{32}$"}}),
        "expected_focus_revision" | "expected_revision" | "since_seq" => {
            serde_json::json!({"minimum": 0})
        }
        "before_revision" | "before_seq" => serde_json::json!({"minimum": 1}),
        "limit" => {
            let (default, max) = PAGES
                .iter()
                .find(|(t, _, _)| *t == tool)
                .map(|(_, d, m)| (*d, *m))?;
            serde_json::json!({"minimum": 1, "maximum": max, "default": default})
        }
        _ => return None,
    })
}

/// Replace each local `$ref` with the definition it names: each enum is used
/// once or twice per tool, so inline it is shorter than `$defs` plus pointers.
fn inline_defs(v: &mut Value, defs: &JsonObject) {
    match v {
        Value::Object(o) => {
            let target = o
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .and_then(|name| defs.get(name))
                .cloned();
            if let Some(Value::Object(def)) = target {
                o.remove("$ref");
                for (k, d) in def {
                    o.entry(k).or_insert(d);
                }
            }
            o.values_mut().for_each(|c| inline_defs(c, defs));
        }
        Value::Array(a) => a.iter_mut().for_each(|c| inline_defs(c, defs)),
        _ => {}
    }
}

fn constrained(tool: &str, read_only: bool, mut schema: JsonObject) -> JsonObject {
    // tools/list is read by every model on every connection: no meta-schema
    // URL, no Rust integer formats, no `$defs` indirection, nothing that goes
    // without saying (flags default to false, lists to empty). Unknown
    // arguments are still refused (serde's deny_unknown_fields, named by
    // args::parse_tool); the instructions say so once instead of sixteen
    // `additionalProperties: false`.
    schema.remove("$schema");
    schema.remove("additionalProperties");
    if let Some(Value::Object(defs)) = schema.remove("$defs") {
        let mut whole = Value::Object(std::mem::take(&mut schema));
        inline_defs(&mut whole, &defs);
        if let Value::Object(o) = whole {
            schema = o;
        }
    }
    let required: Vec<String> = match schema.get("required") {
        Some(Value::Array(r)) => r
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            if let Value::Object(p) = prop {
                p.remove("format");
                // An optional property is omitted, not sent as null: say its type alone.
                if !required.contains(name)
                    && let Some(Value::Array(alts)) = p.get("anyOf")
                    && alts.len() == 2
                    && let Some(Value::Object(one)) = alts
                        .iter()
                        .find(|a| a.get("type") != Some(&Value::from("null")))
                        .cloned()
                {
                    p.remove("anyOf");
                    for (k, v) in one {
                        p.entry(k).or_insert(v);
                    }
                }
                if !required.contains(name)
                    && let Some(Value::Array(ts)) = p.get("type")
                    && ts.len() == 2
                    && ts.contains(&Value::from("null"))
                    && let Some(t) = ts.iter().find(|t| *t != "null").cloned()
                {
                    p.insert("type".into(), t);
                }
                // schemars writes `default: null` for every Option: absence says it.
                if matches!(p.get("default"), Some(Value::Null | Value::Bool(false)))
                    || p.get("default") == Some(&Value::Array(Vec::new()))
                {
                    p.remove("default");
                }
            }
            if let (Some(Value::Object(extra)), Value::Object(p)) =
                (constraint(tool, read_only, name), prop)
            {
                for (k, v) in extra {
                    p.insert(k, v);
                }
            }
        }
    }
    schema
}

/// Every tool, once: the profile that offers it, its name, definition,
/// handler and argument type, and whether those arguments are closed (brain's
/// own refuse unknown ones; a seed profile ignores them, as its seed says).
/// tools/list, dispatch and the tests all read this table, so a tool is
/// added in one place.
macro_rules! registry {
    ($( $profile:ident $name:path => $definition:path, $call:path, $args:ty, $closed:literal; )*) => {
        /// The definitions of the profiles turned on, in the table's order
        /// (built once at start-up).
        pub fn definitions_for(on: crate::profiles::Profiles) -> Vec<Tool> {
            use crate::profiles::Profile;
            let mut tools = Vec::new();
            $( if on.has(Profile::$profile) { tools.push($definition()); } )*
            tools
        }

        /// Run the named tool; `None` when no such tool exists.
        pub async fn call(
            name: &str,
            ctx: &ToolCtx<'_>,
            args: JsonObject,
        ) -> Option<Result<Answer, StoreError>> {
            Some(match name {
                $( $name => $call(ctx, args).await.into_answer(), )*
                _ => return None,
            })
        }

        /// Each tool's name, and whether its argument type refuses unknown
        /// arguments as the table says it does.
        #[cfg(test)]
        fn arguments_as_declared() -> Vec<(&'static str, bool)> {
            vec![$( ($name, crate::mcp::args::refuses_unknown::<$args>() == $closed), )*]
        }
    };
}

registry! {
    Brain session_start::NAME => session_start::definition, session_start::call, session_start::Args, true;
    Brain session_bind::NAME => session_bind::definition, session_bind::call, session_bind::Args, true;
    Brain session_resume::NAME => session_resume::definition, session_resume::call, session_resume::Args, true;
    Brain session_end::NAME => session_end::definition, session_end::call, session_end::Args, true;
    Brain session_relay::NAME => session_relay::definition, session_relay::call, session_relay::Args, true;
    Brain session_abandon::NAME => session_abandon::definition, session_abandon::call, session_abandon::Args, true;
    Brain remember::NAME => remember::definition, remember::call, remember::Args, true;
    Brain focus_get::NAME => focus_get::definition, focus_get::call, focus_get::Args, true;
    Brain session_get::NAME => session_get::definition, session_get::call, session_get::Args, true;
    Brain recall::NAME => recall::definition, recall::call, recall::Args, true;
    Brain document_get::NAME => document_get::definition, document_get::call, document_get::Args, true;
    Brain document_put::NAME => document_put::definition, document_put::call, document_put::Args, true;
    Brain focus_history::NAME => focus_history::definition, focus_history::call, focus_history::Args, true;
    Brain session_list::NAME => session_list::definition, session_list::call, session_list::Args, true;
    Brain receipts::NAME => receipts::definition, receipts::call, receipts::Args, true;
    Brain todo_ack::NAME => todo_ack::definition, todo_ack::call, todo_ack::Args, true;
    Brain project_list::NAME => project_list::definition, project_list::call, project_list::Args, true;
    BrainCore profiles::brain_core::NAME => profiles::brain_core::definition, profiles::brain_core::call, profiles::brain_core::Args, true;
    Aziel profiles::aziel::OPEN => profiles::aziel::open_definition, profiles::aziel::open, profiles::aziel::OpenArgs, false;
    Aziel profiles::aziel::CLOSE => profiles::aziel::close_definition, profiles::aziel::close, profiles::aziel::CloseArgs, false;
}

/// brain's own tools' definitions (profile `brain`).
pub fn definitions() -> Vec<Tool> {
    definitions_for(crate::profiles::Profiles::only(
        crate::profiles::Profile::Brain,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_and_property_is_described() {
        let tools = definitions();
        assert_eq!(tools.len(), 17);
        for t in &tools {
            let desc = t.description.as_deref().unwrap_or("");
            assert!(desc.len() > 80, "{} needs a real description", t.name);
            assert!(t.title.is_some(), "{} has no title", t.name);
            let a = t.annotations.as_ref().expect("annotations");
            assert_eq!(a.open_world_hint, Some(false), "{}", t.name);
            assert!(
                a.read_only_hint.is_some()
                    && a.destructive_hint.is_some()
                    && a.idempotent_hint.is_some()
            );
            let props = t
                .input_schema
                .get("properties")
                .and_then(|p| p.as_object())
                .expect("properties");
            assert!(!props.is_empty(), "{}", t.name);
            for (k, v) in props {
                let d = v.get("description").and_then(|d| d.as_str()).unwrap_or("");
                assert!(d.len() > 10, "{}.{} needs a description", t.name, k);
            }
            let out = t.output_schema.as_ref().expect("output schema");
            assert_eq!(
                out.get("type"),
                Some(&serde_json::json!("object")),
                "{}",
                t.name
            );
            assert!(t.name.starts_with("brain_"));
        }
    }

    #[test]
    fn profile_tools_are_described_too() {
        let all = definitions_for(crate::profiles::Profiles::all());
        assert_eq!(all.len(), 20);
        for t in all.iter().skip(17) {
            let desc = t.description.as_deref().unwrap_or("");
            assert!(desc.len() > 80, "{}", t.name);
            let a = t.annotations.as_ref().expect("annotations");
            assert_eq!(a.open_world_hint, Some(false), "{}", t.name);
            let props = t.input_schema["properties"]
                .as_object()
                .expect("properties");
            for (k, v) in props {
                let d = v.get("description").and_then(|d| d.as_str()).unwrap_or("");
                assert!(d.len() > 10, "{}.{} needs a description", t.name, k);
            }
        }
        assert_eq!(definitions_for(Default::default()).len(), 17);
    }

    #[test]
    fn every_tool_refuses_unknown_arguments_as_declared() {
        // The input schemas leave `additionalProperties: false` out (tools/list's
        // budget); the refusal lives in each argument type, checked here
        // against the registry, which lists every tool of every profile.
        let all = arguments_as_declared();
        assert_eq!(
            all.len(),
            definitions_for(crate::profiles::Profiles::all()).len()
        );
        assert!(all.iter().all(|(_, as_declared)| *as_declared), "{all:?}");
    }

    #[test]
    fn tools_list_fits_in_32_kb() {
        // What a client receives as the tools/list result, compact (issue 12):
        // it sits in every model's context on every connection.
        let list = serde_json::json!({ "tools": definitions() });
        let text = serde_json::to_string(&list).unwrap_or_default();
        if let Ok(path) = std::env::var("BRAIN_DUMP_TOOLS_LIST") {
            let _ = std::fs::write(path, &text);
        }
        assert!(text.len() <= 32_000, "tools/list is {} bytes", text.len());
        // Also as a client that escapes non-ASCII (Python's json.dumps) counts it.
        let escaped: usize = text
            .chars()
            .map(|c| if c.is_ascii() { 1 } else { 6 * c.len_utf16() })
            .sum();
        assert!(
            escaped <= 32_000,
            "tools/list is {escaped} bytes ASCII-escaped"
        );
    }

    #[test]
    fn limits_are_in_the_schemas() {
        let tools = definitions();
        let prop = |tool: &str, p: &str| {
            let t = tools.iter().find(|t| t.name == tool).expect("tool");
            t.input_schema["properties"][p].clone()
        };
        assert_eq!(
            prop("brain_session_start", "project")["pattern"],
            "^[A-Za-z0-9_./-]{1,128}$"
        );
        assert_eq!(prop("brain_remember", "tags")["maxItems"], 16);
        assert_eq!(prop("brain_receipts", "limit")["maximum"], 100);
        assert_eq!(prop("brain_recall", "limit")["default"], 10);
        assert_eq!(
            prop("brain_session_end", "expected_focus_revision")["minimum"],
            0
        );
        assert!(prop("brain_session_end", "session_id")["pattern"].is_string());
    }

    #[test]
    fn reads_are_read_only_and_closers_destructive() {
        for t in definitions() {
            let a = t.annotations.expect("annotations");
            let name = t.name.as_ref();
            let read = matches!(
                name,
                "brain_focus_get"
                    | "brain_session_get"
                    | "brain_recall"
                    | "brain_document_get"
                    | "brain_focus_history"
                    | "brain_session_list"
                    | "brain_receipts"
                    | "brain_project_list"
            );
            assert_eq!(a.read_only_hint, Some(read), "{name}");
            let closes = matches!(
                name,
                "brain_session_end"
                    | "brain_session_relay"
                    | "brain_session_abandon"
                    | "brain_document_put"
                    | "brain_todo_ack"
            );
            assert_eq!(a.destructive_hint, Some(closes), "{name}");
        }
    }
}
