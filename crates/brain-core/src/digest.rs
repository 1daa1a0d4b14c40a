//! Canonical JSON and SHA-256 digests.
//!
//! Canonical form: object keys sorted by their UTF-8 bytes at every depth, no
//! whitespace, serde_json's number and string encoding. Sorting is done here
//! rather than relied upon from `serde_json::Map`, whose order depends on a
//! crate feature that any dependency may switch on.

use serde_json::Value;
use sha2::{Digest, Sha256};

pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// SHA-256 of the canonical JSON of a call's arguments: the replay key of SPEC §3.5
/// and the `request_digest` of receipts.
pub fn request_digest(arguments: &Value) -> String {
    sha256_hex(canonical_json(arguments).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_digest() {
        let a = json!({"b": 1, "a": {"y": [1, {"k": "v", "c": null}], "x": "é"}});
        let b = json!({"a": {"x": "é", "y": [1, {"c": null, "k": "v"}]}, "b": 1});
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(request_digest(&a), request_digest(&b));
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"x":"é","y":[1,{"c":null,"k":"v"}]},"b":1}"#
        );
    }

    #[test]
    fn different_values_give_different_digests() {
        assert_ne!(
            request_digest(&json!({"summary": "a"})),
            request_digest(&json!({"summary": "b"}))
        );
        assert_ne!(
            request_digest(&json!({"n": 1})),
            request_digest(&json!({"n": "1"}))
        );
    }

    #[test]
    fn sha256_matches_a_known_vector() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
