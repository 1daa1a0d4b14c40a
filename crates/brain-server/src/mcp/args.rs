//! Argument parsing: JSON arguments into typed structs, with every failure an
//! `invalid_argument` that names the field (SPEC §2: the model can correct itself).

use brain_core::digest::request_digest;
use brain_core::error::DomainError;
use rmcp::model::JsonObject;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

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
        DomainError::invalid_argument(&field, inner)
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
pub fn cursor_offset(cursor: Option<&str>) -> Result<i64, DomainError> {
    match cursor {
        None => Ok(0),
        Some(c) => c
            .parse::<i64>()
            .ok()
            .filter(|n| (0..=10_000).contains(n))
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
