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
///
/// The walk keeps the way down as a list of steps and spells it out only for
/// the string it refuses: a path built at every value would copy the whole
/// path once per element, and a deep value of many small elements (a 1 MiB
/// argument) would cost gigabytes of copying on the request's worker.
pub fn check_json(path: &str, v: &Value) -> Result<(), DomainError> {
    walk(path, v, &mut Vec::new())
}

/// One step down a JSON value: an array's index or an object's key.
enum Step<'a> {
    Index(usize),
    Key(&'a str),
}

fn walk<'a>(path: &str, v: &'a Value, trail: &mut Vec<Step<'a>>) -> Result<(), DomainError> {
    match v {
        Value::String(s) => refuse_if_control(path, trail, s),
        Value::Array(items) => items.iter().enumerate().try_for_each(|(i, x)| {
            trail.push(Step::Index(i));
            let checked = walk(path, x, trail);
            trail.pop();
            checked
        }),
        Value::Object(m) => m.iter().try_for_each(|(k, x)| {
            trail.push(Step::Key(k));
            let checked = refuse_if_control(path, trail, k).and_then(|()| walk(path, x, trail));
            trail.pop();
            checked
        }),
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
    }
}

fn refuse_if_control(path: &str, trail: &[Step<'_>], s: &str) -> Result<(), DomainError> {
    if s.chars().any(is_refused_control) {
        check(&spell(path, trail), s)
    } else {
        Ok(())
    }
}

/// The path of `trail` below `path`, as the error names it.
fn spell(path: &str, trail: &[Step<'_>]) -> String {
    let mut out = path.to_owned();
    for step in trail {
        match step {
            Step::Index(i) => out.push_str(&format!("[{i}]")),
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                // The name is echoed in the error: never echo the control
                // itself, nor an unbounded key.
                out.extend(
                    k.chars()
                        .take(64)
                        .map(|c| if is_refused_control(c) { '?' } else { c }),
                );
            }
        }
    }
    out
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
        let e = check_json("args", &json!([{"x": [0, {"y\u{1b}z": 1}]}])).unwrap_err();
        assert!(e.message.contains("args[0].x[1].y?z"), "{}", e.message);
    }

    #[test]
    fn a_deep_value_is_named_by_its_whole_path() {
        let key = "k".repeat(100);
        let mut v = json!(["ok", "bad\u{7}"]);
        for _ in 0..100 {
            v = json!({ key.clone(): v });
        }
        let e = check_json("", &v).unwrap_err();
        assert!(e.message.contains(&format!("{}[1]", "k".repeat(64))));
        assert_eq!(e.message.matches(&"k".repeat(64)).count(), 100);
    }
}
