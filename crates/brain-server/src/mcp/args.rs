//! Argument parsing: JSON arguments into typed structs, with every failure an
//! `invalid_argument` that names the field (SPEC §2: the model can correct itself).

use brain_core::digest::request_digest;
use brain_core::error::DomainError;
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// What a tool's argument schema says about its fields: the required ones,
/// every known one, and whether others are refused. Built once per type.
struct Shape {
    required: Vec<String>,
    known: Vec<String>,
    closed: bool,
}

fn shape<T: JsonSchema + 'static>() -> std::sync::Arc<Shape> {
    use std::any::TypeId;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    static SHAPES: OnceLock<Mutex<HashMap<TypeId, Arc<Shape>>>> = OnceLock::new();
    let map = SHAPES.get_or_init(Default::default);
    let mut guard = match map.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    guard
        .entry(TypeId::of::<T>())
        .or_insert_with(|| {
            let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
            let names = |v: &Value| -> Vec<String> {
                v.as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            Arc::new(Shape {
                required: names(&schema["required"]),
                known: schema["properties"]
                    .as_object()
                    .map(|m| m.keys().cloned().collect())
                    .unwrap_or_default(),
                closed: schema["additionalProperties"] == Value::Bool(false),
            })
        })
        .clone()
}

/// Whether `T` refuses arguments it does not name (serde's `deny_unknown_fields`).
#[cfg(test)]
pub(crate) fn refuses_unknown<T: JsonSchema + 'static>() -> bool {
    shape::<T>().closed
}

/// A tool's arguments into `T`: every missing required argument named at
/// once, an unknown one named with the list of known ones, and type errors
/// said as a person would — then [`parse`].
pub fn parse_tool<T: DeserializeOwned + JsonSchema + 'static>(
    args: JsonObject,
) -> Result<T, DomainError> {
    let s = shape::<T>();
    let missing: Vec<&str> = s
        .required
        .iter()
        .filter(|r| !args.contains_key(r.as_str()))
        .map(String::as_str)
        .collect();
    if let Some(first) = missing.first() {
        let what = if missing.len() == 1 {
            "is required and missing".to_owned()
        } else {
            format!(
                "is required and missing, and so are: {}",
                missing[1..].join(", ")
            )
        };
        return Err(DomainError::invalid_argument(first, what)
            .with_details(serde_json::json!({"field": first, "missing": missing})));
    }
    if s.closed
        && let Some(unknown) = args.keys().find(|k| !s.known.contains(k))
    {
        let name: String = unknown.chars().take(64).collect();
        return Err(DomainError::invalid_argument(
            &name,
            format!(
                "is not an argument of this tool, which takes: {}",
                s.known.join(", ")
            ),
        ));
    }
    parse(args)
}

/// `args` with `old` spelled `new`: an argument renamed keeps its old name
/// for clients written against it (the new one wins when both are given).
pub fn renamed(mut args: JsonObject, old: &str, new: &str) -> JsonObject {
    if let Some(v) = args.remove(old) {
        args.entry(new.to_owned()).or_insert(v);
    }
    args
}

/// serde's wording, said plainly (it names types, never values).
fn plain(msg: &str) -> String {
    let expected = msg.split("expected ").nth(1).unwrap_or("");
    if msg.starts_with("invalid type") || msg.starts_with("invalid value") {
        let want = match expected {
            e if e.starts_with("i64") || e.starts_with("u64") || e.starts_with("i32") => {
                "an integer"
            }
            e if e.starts_with("a boolean") => "true or false",
            e if e.starts_with("a string") => "a string",
            e if e.starts_with("a sequence") => "an array",
            e if e.starts_with("a map") || e.starts_with("struct") => "an object",
            _ => "",
        };
        if !want.is_empty() {
            return format!("must be {want}");
        }
    }
    if let Some(rest) = msg.strip_prefix("unknown variant ")
        && let Some((_, options)) = rest.split_once("expected ")
    {
        return format!("must be one of {}", options.replace('`', ""));
    }
    msg.to_owned()
}

/// Deserialize `args` into `T`, naming the offending field on failure.
pub fn parse<T: DeserializeOwned>(args: JsonObject) -> Result<T, DomainError> {
    let args = Value::Object(args);
    brain_core::text::check_json("", &args)?;
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let field = if path == "." {
            field_from_message(&inner).unwrap_or_else(|| "arguments".to_owned())
        } else {
            path
        };
        // serde's messages name types, never values, so they are safe to return.
        DomainError::invalid_argument(&field, plain(&inner))
    })
}

/// serde reports missing and unknown fields at the root, naming them in backticks.
fn field_from_message(msg: &str) -> Option<String> {
    let start = msg.find('`')? + 1;
    let len = msg[start..].find('`')?;
    Some(msg[start..start + len].to_owned())
}

/// The replay and receipt digest: canonical JSON of the parsed arguments (so
/// defaults and spelling do not matter), without flags that do not change the call.
pub fn digest<T: Serialize>(args: &T, ignore: &[&str]) -> String {
    let mut v = serde_json::to_value(args).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        for k in ignore {
            m.remove(*k);
        }
    }
    request_digest(&v)
}

pub fn max_bytes(field: &str, value: &str, max: usize) -> Result<(), DomainError> {
    if value.len() > max {
        Err(DomainError::invalid_argument(
            field,
            format!("is {} bytes, the limit is {max}", value.len()),
        ))
    } else {
        Ok(())
    }
}

pub fn max_chars(field: &str, value: &str, max: usize) -> Result<(), DomainError> {
    if value.chars().count() > max {
        Err(DomainError::invalid_argument(
            field,
            format!("must be at most {max} characters"),
        ))
    } else {
        Ok(())
    }
}

/// A page size: `default` when absent, else 1..=`max`.
pub fn bounded(
    field: &str,
    value: Option<i64>,
    default: i64,
    max: i64,
) -> Result<i64, DomainError> {
    match value {
        None => Ok(default),
        Some(v) if (1..=max).contains(&v) => Ok(v),
        Some(_) => Err(DomainError::invalid_argument(
            field,
            format!("must be between 1 and {max}"),
        )),
    }
}

/// An offset cursor (recall's pages).
/// The deepest offset a cursor may name: deeper pages of a ranked search are
/// not worth their cost.
pub const MAX_CURSOR_OFFSET: i64 = 10_000;

pub fn cursor_offset(cursor: Option<&str>) -> Result<i64, DomainError> {
    match cursor {
        None => Ok(0),
        Some(c) => c
            .parse::<i64>()
            .ok()
            .filter(|n| (0..=MAX_CURSOR_OFFSET).contains(n))
            .ok_or_else(|| {
                DomainError::invalid_argument("cursor", "is not a cursor from this tool")
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brain_core::error::ErrorCode;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct A {
        name: String,
        n: i64,
    }

    fn obj(v: Value) -> JsonObject {
        match v {
            Value::Object(m) => m,
            _ => JsonObject::new(),
        }
    }

    #[test]
    fn wrong_type_names_the_field() {
        let e = parse::<A>(obj(json!({"name": "x", "n": "1"}))).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert_eq!(e.details["field"], json!("n"));
    }

    #[test]
    fn missing_and_unknown_fields_are_named() {
        let e = parse::<A>(obj(json!({"name": "x"}))).unwrap_err();
        assert_eq!(e.details["field"], json!("n"));
        let e = parse::<A>(obj(json!({"name": "x", "n": 1, "extra": true}))).unwrap_err();
        assert_eq!(e.details["field"], json!("extra"));
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct B {
        a: String,
        b: i64,
        c: bool,
        #[serde(default)]
        d: Option<String>,
    }

    #[test]
    fn tools_name_every_missing_argument_and_speak_plainly() {
        let e = parse_tool::<B>(obj(json!({"a": "x"}))).unwrap_err();
        assert_eq!(e.details["missing"], json!(["b", "c"]));
        assert!(
            e.message
                .starts_with("b is required and missing, and so are: c"),
            "{}",
            e.message
        );
        let e = parse_tool::<B>(obj(json!({"a": "x", "b": 1, "c": true, "zz": 1}))).unwrap_err();
        assert!(
            e.message.contains("zz is not an argument") && e.message.contains("a, b, c, d"),
            "{}",
            e.message
        );
        let e = parse_tool::<B>(obj(json!({"a": "x", "b": "1", "c": true}))).unwrap_err();
        assert!(
            e.message.starts_with("b must be an integer"),
            "{}",
            e.message
        );
        assert!(!e.message.contains("i64"));
    }

    #[test]
    fn digest_ignores_listed_fields_and_key_order() {
        #[derive(Serialize)]
        struct D {
            a: i32,
            dry_run: bool,
        }
        assert_eq!(
            digest(
                &D {
                    a: 1,
                    dry_run: true
                },
                &["dry_run"]
            ),
            digest(
                &D {
                    a: 1,
                    dry_run: false
                },
                &["dry_run"]
            )
        );
        assert_ne!(
            digest(
                &D {
                    a: 1,
                    dry_run: true
                },
                &[]
            ),
            digest(
                &D {
                    a: 1,
                    dry_run: false
                },
                &[]
            )
        );
    }
}

/// A JSON document's body: the text, or the object itself (an agent holding
/// an object need not encode it into a string first).
#[derive(Debug, Clone, serde::Deserialize, Serialize)]
#[serde(untagged)]
pub enum JsonBody {
    Text(String),
    Object(JsonObject),
}

impl JsonBody {
    /// The body as stored: the text as given, an object as compact JSON.
    pub fn into_text(self) -> String {
        match self {
            JsonBody::Text(t) => t,
            JsonBody::Object(o) => Value::Object(o).to_string(),
        }
    }

    pub fn is_object(&self) -> bool {
        matches!(self, JsonBody::Object(_))
    }
}

impl JsonSchema for JsonBody {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "JsonBody".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": ["string", "object"]})
    }
}
