//! Text hygiene (SPEC §4): no caller-supplied string may hold a NUL or another
//! C0 control character (tab, CR and LF are text). PostgreSQL refuses NUL in
//! `text` while SQLite stores it, so without this rule the stores would disagree;
//! the check runs before either is asked.

use serde_json::Value;

use crate::error::DomainError;

/// Whether `c` is a control character brain refuses in text: C0 but tab, CR
/// and LF; DEL; and the C1 block (U+0080–U+009F, e.g. U+009B, a terminal CSI).
pub fn is_refused_control(c: char) -> bool {
    c.is_control() && !matches!(c, '\t' | '\n' | '\r')
}

/// Whether `c` may appear in an identifier a person reads (a JWT subject, a
/// client key): no control at all, and no bidirectional override, isolate or
/// mark, nor BOM, which can make one name display as another.
pub fn is_identifier_char(c: char) -> bool {
    !c.is_control()
        && !matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// Refuse a string with a control character, naming `field`.
pub fn check(field: &str, s: &str) -> Result<(), DomainError> {
    match s.chars().position(is_refused_control) {
        None => Ok(()),
        Some(at) => Err(DomainError::invalid_argument(
            field,
            format!(
                "holds a control character (U+{:04X}) at character {at}; only tab, CR and LF are allowed",
                s.chars().nth(at).map_or(0, u32::from)
            ),
        )),
    }
}

/// Check every string (keys too) anywhere in a JSON value; `path` names the
/// value for the error, e.g. `executive_state.missions[2]`.
pub fn check_json(path: &str, v: &Value) -> Result<(), DomainError> {
    match v {
        Value::String(s) => check(path, s),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, x)| check_json(&format!("{path}[{i}]"), x)),
        Value::Object(m) => m.iter().try_for_each(|(k, x)| {
            // The name is echoed in the error: never echo the control itself,
            // nor an unbounded key.
            let name: String = k
                .chars()
                .take(64)
                .map(|c| if is_refused_control(c) { '?' } else { c })
                .collect();
            let field = if path.is_empty() {
                name
            } else {
                format!("{path}.{name}")
            };
            check(&field, k)?;
            check_json(&field, x)
        }),
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn controls_are_refused_and_named() {
        assert!(check("f", "plain text\twith tab\r\nand lines").is_ok());
        assert!(check("f", "ünïcødé ✓").is_ok());
        assert!(!is_identifier_char('\u{202e}') && !is_identifier_char('\n'));
        assert!(is_identifier_char('é') && is_identifier_char('✓'));
        for bad in ["a\0b", "\u{1}", "x\u{1b}[31m", "del\u{7f}", "c1\u{9b}"] {
            let e = check("summary", bad).unwrap_err();
            assert_eq!(e.code, crate::ErrorCode::InvalidArgument);
            assert!(e.message.contains("summary"), "{}", e.message);
        }
        let e = check_json("", &json!({"a": {"b": ["ok", "no\0"]}})).unwrap_err();
        assert!(e.message.contains("a.b[1]"), "{}", e.message);
        let e = check_json("", &json!({"k\0": 1})).unwrap_err();
        assert!(
            e.message.contains("k?") && !e.message.contains('\0'),
            "{}",
            e.message
        );
        assert!(check_json("", &json!({"n": 1, "t": true, "z": null})).is_ok());
    }
}
