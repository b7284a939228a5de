//! A strict JSON parser into a borrowed tree, for the qlog lane (`qlog.rs`).
//!
//! It accepts a subset of what orjson (the Python reader's parser) accepts and gives the same values for it:
//! anything it is not sure about (integers beyond int64, which orjson turns into Python ints or floats;
//! infinities; lone surrogates; nesting deeper than the limit; any syntax error) fails, and the lane hands the
//! record to the Python reader, which decides. Lookups take the last of duplicate keys, as orjson's dict does.

use std::borrow::Cow;

pub enum Value<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Cow<'a, str>),
    Array(Vec<Value<'a>>),
    Object(Vec<(Cow<'a, str>, Value<'a>)>),
}

pub type Object<'a> = [(Cow<'a, str>, Value<'a>)];

/// The value of `key` (the last one when the key repeats), None when absent.
#[inline]
pub fn get<'v, 'a>(object: &'v Object<'a>, key: &str) -> Option<&'v Value<'a>> {
    object.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
}

impl<'a> Value<'a> {
    pub fn as_object(&self) -> Option<&Object<'a>> {
        match self {
            Value::Object(items) => Some(items),
            _ => None,
        }
    }

    /// Python truthiness of the value orjson would give.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Array(items) => !items.is_empty(),
            Value::Object(items) => !items.is_empty(),
        }
    }
}

pub struct Fail;

/// The value of `text` (one JSON text with optional surrounding JSON whitespace), or Fail.
pub fn parse(text: &[u8], max_depth: usize) -> Result<Value<'_>, Fail> {
    let text = std::str::from_utf8(text).map_err(|_| Fail)?;
    let mut parser = Parser { text, bytes: text.as_bytes(), at: 0, depth: 0, max_depth };
    parser.skip_space();
    let value = parser.value()?;
    parser.skip_space();
    if parser.at != parser.bytes.len() {
        return Err(Fail);
    }
    Ok(value)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    depth: usize,
    max_depth: usize,
}

impl<'a> Parser<'a> {
    #[inline]
    fn skip_space(&mut self) {
        while let Some(&b) = self.bytes.get(self.at) {
            if b == b' ' || b == b'\n' || b == b'\t' || b == b'\r' {
                self.at += 1;
            } else {
                break;
            }
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn literal(&mut self, word: &[u8], value: Value<'a>) -> Result<Value<'a>, Fail> {
        if self.bytes[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(value)
        } else {
            Err(Fail)
        }
    }

    fn value(&mut self) -> Result<Value<'a>, Fail> {
        match self.peek().ok_or(Fail)? {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => Ok(Value::Str(self.string()?)),
            b't' => self.literal(b"true", Value::Bool(true)),
            b'f' => self.literal(b"false", Value::Bool(false)),
            b'n' => self.literal(b"null", Value::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(Fail),
        }
    }

    fn enter(&mut self) -> Result<(), Fail> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(Fail);
        }
        self.at += 1;
        self.skip_space();
        Ok(())
    }

    fn object(&mut self) -> Result<Value<'a>, Fail> {
        self.enter()?;
        let mut items = Vec::new();
        if self.peek() == Some(b'}') {
            self.at += 1;
            self.depth -= 1;
            return Ok(Value::Object(items));
        }
        loop {
            if self.peek() != Some(b'"') {
                return Err(Fail);
            }
            let key = self.string()?;
            self.skip_space();
            if self.peek() != Some(b':') {
                return Err(Fail);
            }
            self.at += 1;
            self.skip_space();
            let value = self.value()?;
            items.push((key, value));
            self.skip_space();
            match self.peek() {
                Some(b',') => {
                    self.at += 1;
                    self.skip_space();
                }
                Some(b'}') => {
                    self.at += 1;
                    self.depth -= 1;
                    return Ok(Value::Object(items));
                }
                _ => return Err(Fail),
            }
        }
    }

    fn array(&mut self) -> Result<Value<'a>, Fail> {
        self.enter()?;
        let mut items = Vec::new();
        if self.peek() == Some(b']') {
            self.at += 1;
            self.depth -= 1;
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value()?);
            self.skip_space();
            match self.peek() {
                Some(b',') => {
                    self.at += 1;
                    self.skip_space();
                }
                Some(b']') => {
                    self.at += 1;
                    self.depth -= 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(Fail),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, Fail> {
        let digits = self.bytes.get(self.at..self.at + 4).ok_or(Fail)?;
        let mut out = 0u32;
        for &d in digits {
            out = out * 16 + (d as char).to_digit(16).ok_or(Fail)?;
        }
        self.at += 4;
        Ok(out)
    }

    fn string(&mut self) -> Result<Cow<'a, str>, Fail> {
        self.at += 1; // the opening quote
        let start = self.at;
        // The common case: no escapes, borrowed as is (the text is valid UTF-8 already).
        loop {
            let b = *self.bytes.get(self.at).ok_or(Fail)?;
            if b == b'"' {
                let out = &self.text[start..self.at];
                self.at += 1;
                return Ok(Cow::Borrowed(out));
            }
            if b == b'\\' {
                break;
            }
            if b < 0x20 {
                return Err(Fail);
            }
            self.at += 1;
        }
        let mut out = String::from(&self.text[start..self.at]);
        loop {
            let b = *self.bytes.get(self.at).ok_or(Fail)?;
            match b {
                b'"' => {
                    self.at += 1;
                    return Ok(Cow::Owned(out));
                }
                b'\\' => {
                    let e = *self.bytes.get(self.at + 1).ok_or(Fail)?;
                    self.at += 2;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let first = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&first) {
                                if self.bytes.get(self.at..self.at + 2) != Some(b"\\u") {
                                    return Err(Fail);
                                }
                                self.at += 2;
                                let second = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&second) {
                                    return Err(Fail);
                                }
                                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                            } else if (0xDC00..0xE000).contains(&first) {
                                return Err(Fail);
                            } else {
                                first
                            };
                            out.push(char::from_u32(code).ok_or(Fail)?);
                        }
                        _ => return Err(Fail),
                    }
                }
                0..=0x1f => return Err(Fail),
                _ => {
                    // copy the run up to the next quote or backslash (whole UTF-8 sequences)
                    let run = self.at;
                    while let Some(&c) = self.bytes.get(self.at) {
                        if c == b'"' || c == b'\\' || c < 0x20 {
                            break;
                        }
                        self.at += 1;
                    }
                    out.push_str(&self.text[run..self.at]);
                }
            }
        }
    }

    fn number(&mut self) -> Result<Value<'a>, Fail> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek() {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => {
                while matches!(self.peek(), Some(b'0'..=b'9')) {
                    self.at += 1;
                }
            }
            _ => return Err(Fail),
        }
        let mut float = false;
        if self.peek() == Some(b'.') {
            float = true;
            self.at += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(Fail);
            }
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.at += 1;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            float = true;
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(Fail);
            }
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.at += 1;
            }
        }
        let text = &self.text[start..self.at];
        if float {
            // Rust's float parsing is correctly rounded, as orjson's; orjson rejects infinities.
            let value: f64 = text.parse().map_err(|_| Fail)?;
            if !value.is_finite() {
                return Err(Fail);
            }
            Ok(Value::Float(value))
        } else {
            // Beyond int64 orjson gives a Python int (up to 2**64) or a float: left to the Python reader.
            text.parse::<i64>().map(Value::Int).map_err(|_| Fail)
        }
    }
}
