//! The strict JSON parser: the values orjson gives where it is sure, a failure (the record goes to the Python
//! reader) everywhere else. Hand-made texts: each names the case it pins.

use super::*;

fn parse_with(text: &str, max_depth: usize, check: impl FnOnce(Value<'_>)) -> bool {
    let mut tape = Tape::default();
    match tape.parse(text.as_bytes(), max_depth) {
        Ok(doc) => {
            check(doc.root());
            true
        }
        Err(Fail) => false,
    }
}

fn fails(text: &str) -> bool {
    !parse_with(text, 64, |_| {})
}

#[test]
fn objects_give_the_last_of_duplicate_keys_as_orjson() {
    let ok = parse_with(r#" {"a": 1, "b": {"c": [true, null, "x"]}, "a": 2.5} "#, 64, |root| {
        let obj = root.as_object().expect("an object");
        assert!(matches!(obj.get("a"), Some(Value::Float(v)) if v == 2.5));
        let [a, b, missing] = obj.fields(|k| match k {
            "a" => Some(0),
            "b" => Some(1),
            "z" => Some(2),
            _ => None,
        });
        assert!(matches!(a, Some(Value::Float(_))) && missing.is_none());
        let c = b.and_then(Value::as_object).and_then(|b| b.get("c"));
        let Some(Value::Array(items)) = c else { panic!("an array") };
        let items: Vec<Value> = items.iter().collect();
        assert!(matches!(items[..], [Value::Bool(true), Value::Null, Value::Str("x")]));
    });
    assert!(ok);
}

#[test]
fn numbers_are_ints_or_correctly_rounded_floats() {
    let ok = parse_with("[0, -7, 9223372036854775807, 0.1, 1e3, -2.5E-3, 1.7976931348623157e308]", 64, |root| {
        let Value::Array(items) = root else { panic!() };
        let values: Vec<String> = items
            .iter()
            .map(|v| match v {
                Value::Int(i) => format!("i{i}"),
                Value::Float(f) => format!("f{f:e}"),
                _ => "?".into(),
            })
            .collect();
        assert_eq!(values, ["i0", "i-7", "i9223372036854775807", "f1e-1", "f1e3", "f-2.5e-3", "f1.7976931348623157e308"]);
    });
    assert!(ok);
}

#[test]
fn numbers_orjson_reads_otherwise_fail() {
    // beyond int64 (orjson: a Python int), infinities, and what JSON does not allow
    for text in ["9223372036854775808", "-9223372036854775809", "1e400", "01", "1.", ".5", "+1", "1e", "NaN", "-"] {
        assert!(fails(text), "{text} should fail");
    }
}

#[test]
fn strings_decode_escapes_and_refuse_lone_surrogates() {
    let ok = parse_with(r#"["plain", "tab\tquote\" slash\/ \u00e9 \ud83d\ude00", "caf\u00e9"]"#, 64, |root| {
        let Value::Array(items) = root else { panic!() };
        let texts: Vec<&str> = items.iter().map(|v| if let Value::Str(s) = v { s } else { "?" }).collect();
        assert_eq!(texts, ["plain", "tab\tquote\" slash/ é 😀", "café"]);
    });
    assert!(ok);
    assert!(fails(r#""\ud83d""#)); // a lone high surrogate
    assert!(fails(r#""\ude00x""#)); // a lone low surrogate
    assert!(fails("\"raw\ncontrol\"")); // control characters must be escaped
    assert!(fails(r#""\x41""#));
    assert!(fails("\"not closed"));
}

#[test]
fn long_strings_without_escapes_are_found_word_by_word() {
    // The eight-bytes-at-a-time scan: a quote, a backslash or a control byte at every place of a word.
    for place in 0..9 {
        let body = "a".repeat(place);
        let ok = parse_with(&format!("\"{body}\\n{body}\""), 64, |root| {
            assert!(matches!(root, Value::Str(s) if s == format!("{body}\n{body}")));
        });
        assert!(ok, "escape after {place} bytes");
        assert!(fails(&format!("\"{body}\u{1}\"")), "control byte after {place} bytes");
    }
}

#[test]
fn nesting_beyond_the_limit_fails() {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(parse_with(&deep(5), 5, |_| {}));
    assert!(!parse_with(&deep(6), 5, |_| {}));
    assert!(!parse_with(r#"{"a": {"b": {"c": 1}}}"#, 2, |_| {}));
}

#[test]
fn syntax_errors_and_trailing_text_fail() {
    for text in ["", "   ", "{", "[1,]", "{\"a\":1,}", "{a:1}", "{\"a\" 1}", "[1 2]", "tru", "nul", "{} {}", "[] x", "\u{feff}{}"]
    {
        assert!(fails(text), "{text:?} should fail");
    }
    assert!(fails_bytes(b"{\"a\": \"\xff\"}")); // not UTF-8
}

fn fails_bytes(bytes: &[u8]) -> bool {
    Tape::default().parse(bytes, 64).is_err()
}

#[test]
fn truthiness_is_pythons() {
    let ok = parse_with(r#"[0, 1, 0.0, "", "x", [], [0], {}, {"a": 0}, null, false, true]"#, 64, |root| {
        let Value::Array(items) = root else { panic!() };
        let truthy: Vec<bool> = items.iter().map(Value::truthy).collect();
        assert_eq!(truthy, [false, true, false, false, true, false, true, false, true, false, false, true]);
    });
    assert!(ok);
}

#[test]
fn the_tape_is_reused_from_record_to_record() {
    let mut tape = Tape::default();
    assert!(tape.parse(br#"{"a": "with \"escape\"", "b": [1, 2, 3]}"#, 64).is_ok());
    let doc = tape.parse(br#"{"name": "second"}"#, 64).ok().expect("parses");
    let obj = doc.root().as_object().unwrap();
    assert!(matches!(obj.get("name"), Some(Value::Str("second"))));
    assert!(obj.get("a").is_none());
}
