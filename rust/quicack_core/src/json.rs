//! A strict JSON parser onto a reusable tape, for the qlog lane (`qlog/`).
//!
//! It accepts a subset of what orjson (the Python reader's parser) accepts and gives the same values for it:
//! anything it is not sure about (integers beyond int64, which orjson turns into Python ints or floats;
//! infinities; lone surrogates; nesting deeper than the limit; any syntax error) fails, and the lane hands the
//! record to the Python reader, which decides. Lookups take the last of duplicate keys, as orjson's dict does.
//!
//! The tape holds a record's values depth first (a container, then its children; an object's children are
//! key, value, key, value, ...), each container knowing where its subtree ends. It is cleared, not freed, between
//! records, and strings are spans of the record (or of the tape's buffer when they had escapes), so a record
//! costs no allocation once the tape has grown: a tree of vectors per record cost a third of the lane's time.
//!
//! Kept rather than a maintained crate because every one measured is slower on the lane's work (issue 28):
//! bench/json_parse (`cargo run --release --manifest-path bench/json_parse/Cargo.toml -- FILE`) parses the
//! 444,906 records of bench/qlog_throughput.py's 101 MB input and reads the fields the lane reads, the parsers
//! alternating: CPU time relative to this parser, best / median of 5 and of 7 rounds (2026-11-26, 2-core VM at
//! load 27-40): serde_json 1.0.154 (`Value`) 2.87-2.93x / 2.72-2.82x, simd-json 0.15.1 (borrowed value on a
//! copy of the record: it unescapes in place) 1.98-2.04x / 1.63-2.06x, sonic-rs 0.5.10 (`Value`) 1.14-1.16x /
//! 1.10-1.27x. Splitting and parsing are about half of the lane's time (bench/README.md), so with any of them
//! the ingest would be slower; a crate would also need a layer giving orjson's values where they differ from
//! it (this parser fails exactly where it is not sure to agree with orjson).

#[derive(Clone, Copy)]
enum Node {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str { start: u32, len: u32, escaped: bool },
    Array { end: u32, count: u32 },
    Object { end: u32, count: u32 },
}

#[derive(Default)]
pub struct Tape {
    nodes: Vec<Node>,
    escaped: String,
}

pub struct Fail;

/// A parsed record: the tape and the text its strings point into.
#[derive(Clone, Copy)]
pub struct Doc<'t> {
    nodes: &'t [Node],
    text: &'t str,
    escaped: &'t str,
}

#[derive(Clone, Copy)]
pub struct Obj<'t> {
    doc: Doc<'t>,
    at: usize,
}

#[derive(Clone, Copy)]
pub struct Arr<'t> {
    doc: Doc<'t>,
    at: usize,
}

#[derive(Clone, Copy)]
pub enum Value<'t> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'t str),
    Array(Arr<'t>),
    Object(Obj<'t>),
}

impl<'t> Doc<'t> {
    fn value(self, at: usize) -> Value<'t> {
        match self.nodes[at] {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(b),
            Node::Int(i) => Value::Int(i),
            Node::Float(f) => Value::Float(f),
            Node::Str { .. } => Value::Str(self.str(at)),
            Node::Array { .. } => Value::Array(Arr { doc: self, at }),
            Node::Object { .. } => Value::Object(Obj { doc: self, at }),
        }
    }

    fn str(self, at: usize) -> &'t str {
        match self.nodes[at] {
            Node::Str { start, len, escaped } => {
                let source = if escaped { self.escaped } else { self.text };
                // SAFETY: the parser made the span: between a string's quotes in the record (ASCII, so at char
                // boundaries) or a run it pushed onto `escaped`, both within their text. Unchecked, the lookups
                // of the events' keys skip a bounds and boundary check each (≈ 1 % of the ingest, perf).
                unsafe { source.get_unchecked(start as usize..(start + len) as usize) }
            }
            _ => "",
        }
    }

    /// The index after the subtree at `at`.
    fn skip(self, at: usize) -> usize {
        match self.nodes[at] {
            Node::Array { end, .. } | Node::Object { end, .. } => end as usize,
            _ => at + 1,
        }
    }

    pub fn root(self) -> Value<'t> {
        self.value(0)
    }
}

impl<'t> Obj<'t> {
    /// The value of `key` (the last one when the key repeats), None when absent.
    pub fn get(self, key: &str) -> Option<Value<'t>> {
        let doc = self.doc;
        let end = doc.skip(self.at);
        let mut at = self.at + 1;
        let mut found = None;
        while at < end {
            let value = at + 1;
            if doc.str(at) == key {
                found = Some(value);
            }
            at = doc.skip(value);
        }
        found.map(|v| doc.value(v))
    }

    pub fn is_empty(self) -> bool {
        matches!(self.doc.nodes[self.at], Node::Object { count: 0, .. })
    }

    /// The values of several keys in one pass over the object (`slot` gives a key's place in the result, None
    /// for keys not asked for); each the last of a repeated key, as `get`. One `get` per field walked the
    /// object once per field.
    #[inline]
    pub fn fields<const N: usize>(self, slot: impl Fn(&str) -> Option<usize>) -> [Option<Value<'t>>; N] {
        let doc = self.doc;
        let end = doc.skip(self.at);
        let mut out = [None; N];
        let mut at = self.at + 1;
        while at < end {
            let value = at + 1;
            if let Some(i) = slot(doc.str(at)) {
                out[i] = Some(doc.value(value));
            }
            at = doc.skip(value);
        }
        out
    }
}

impl<'t> Arr<'t> {
    pub fn len(self) -> usize {
        match self.doc.nodes[self.at] {
            Node::Array { count, .. } => count as usize,
            _ => 0,
        }
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    pub fn iter(self) -> impl Iterator<Item = Value<'t>> {
        let doc = self.doc;
        let mut at = self.at + 1;
        (0..self.len()).map(move |_| {
            let value = doc.value(at);
            at = doc.skip(at);
            value
        })
    }
}

impl<'t> Value<'t> {
    pub fn as_object(self) -> Option<Obj<'t>> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    /// Python truthiness of the value orjson would give.
    pub fn truthy(self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => b,
            Value::Int(i) => i != 0,
            Value::Float(f) => f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
        }
    }
}

impl Tape {
    /// `text` (one JSON text with optional surrounding JSON whitespace) onto the tape, or Fail.
    pub fn parse<'t>(&'t mut self, text: &'t [u8], max_depth: usize) -> Result<Doc<'t>, Fail> {
        let text = std::str::from_utf8(text).map_err(|_| Fail)?;
        if text.len() > u32::MAX as usize {
            return Err(Fail);
        }
        self.nodes.clear();
        self.escaped.clear();
        let mut parser = Parser { bytes: text.as_bytes(), text, at: 0, depth: 0, max_depth, tape: self };
        parser.skip_space();
        parser.value()?;
        parser.skip_space();
        if parser.at != parser.bytes.len() {
            return Err(Fail);
        }
        Ok(Doc { nodes: &self.nodes, text, escaped: &self.escaped })
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether any byte of `word` is '"', '\\' or below 0x20 (exact, by the bit tricks for a zero byte and for a
/// byte below n <= 128).
#[inline]
fn special_byte(word: u64) -> bool {
    let quote = word ^ (ONES * b'"' as u64);
    let backslash = word ^ (ONES * b'\\' as u64);
    let zero_quote = quote.wrapping_sub(ONES) & !quote;
    let zero_backslash = backslash.wrapping_sub(ONES) & !backslash;
    let control = word.wrapping_sub(ONES * 0x20) & !word;
    (zero_quote | zero_backslash | control) & HIGHS != 0
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    depth: usize,
    max_depth: usize,
    tape: &'a mut Tape,
}

impl Parser<'_> {
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

    fn literal(&mut self, word: &[u8], node: Node) -> Result<(), Fail> {
        if self.bytes[self.at..].starts_with(word) {
            self.at += word.len();
            self.tape.nodes.push(node);
            Ok(())
        } else {
            Err(Fail)
        }
    }

    fn value(&mut self) -> Result<(), Fail> {
        match self.peek().ok_or(Fail)? {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => self.string(),
            b't' => self.literal(b"true", Node::Bool(true)),
            b'f' => self.literal(b"false", Node::Bool(false)),
            b'n' => self.literal(b"null", Node::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(Fail),
        }
    }

    /// Opens a container: its node (completed by `close`) and its index.
    fn open(&mut self, node: Node) -> Result<usize, Fail> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(Fail);
        }
        self.at += 1;
        self.skip_space();
        self.tape.nodes.push(node);
        Ok(self.tape.nodes.len() - 1)
    }

    fn close(&mut self, index: usize, count: u32) {
        self.at += 1;
        self.depth -= 1;
        let end = self.tape.nodes.len() as u32;
        self.tape.nodes[index] = match self.tape.nodes[index] {
            Node::Array { .. } => Node::Array { end, count },
            _ => Node::Object { end, count },
        };
    }

    fn object(&mut self) -> Result<(), Fail> {
        let index = self.open(Node::Object { end: 0, count: 0 })?;
        let mut count = 0;
        if self.peek() == Some(b'}') {
            self.close(index, 0);
            return Ok(());
        }
        loop {
            if self.peek() != Some(b'"') {
                return Err(Fail);
            }
            self.string()?;
            self.skip_space();
            if self.peek() != Some(b':') {
                return Err(Fail);
            }
            self.at += 1;
            self.skip_space();
            self.value()?;
            count += 1;
            self.skip_space();
            match self.peek() {
                Some(b',') => {
                    self.at += 1;
                    self.skip_space();
                }
                Some(b'}') => {
                    self.close(index, count);
                    return Ok(());
                }
                _ => return Err(Fail),
            }
        }
    }

    fn array(&mut self) -> Result<(), Fail> {
        let index = self.open(Node::Array { end: 0, count: 0 })?;
        let mut count = 0;
        if self.peek() == Some(b']') {
            self.close(index, 0);
            return Ok(());
        }
        loop {
            self.value()?;
            count += 1;
            self.skip_space();
            match self.peek() {
                Some(b',') => {
                    self.at += 1;
                    self.skip_space();
                }
                Some(b']') => {
                    self.close(index, count);
                    return Ok(());
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

    fn string(&mut self) -> Result<(), Fail> {
        self.at += 1; // the opening quote
        let start = self.at;
        // The common case: no escapes, a span of the record (valid UTF-8 already). Eight bytes at a time while
        // none of them is a quote, a backslash or a control character, then byte by byte.
        while let Some(word) = self.bytes.get(self.at..self.at + 8) {
            if special_byte(u64::from_le_bytes(word.try_into().expect("8 bytes"))) {
                break;
            }
            self.at += 8;
        }
        loop {
            let b = *self.bytes.get(self.at).ok_or(Fail)?;
            if b == b'"' {
                let len = (self.at - start) as u32;
                self.at += 1;
                self.tape.nodes.push(Node::Str { start: start as u32, len, escaped: false });
                return Ok(());
            }
            if b == b'\\' {
                break;
            }
            if b < 0x20 {
                return Err(Fail);
            }
            self.at += 1;
        }
        let out_start = self.tape.escaped.len();
        self.tape.escaped.push_str(&self.text[start..self.at]);
        loop {
            let b = *self.bytes.get(self.at).ok_or(Fail)?;
            match b {
                b'"' => {
                    self.at += 1;
                    let len = (self.tape.escaped.len() - out_start) as u32;
                    self.tape.nodes.push(Node::Str { start: out_start as u32, len, escaped: true });
                    return Ok(());
                }
                b'\\' => {
                    let e = *self.bytes.get(self.at + 1).ok_or(Fail)?;
                    self.at += 2;
                    let out = &mut self.tape.escaped;
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
                            self.tape.escaped.push(char::from_u32(code).ok_or(Fail)?);
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
                    self.tape.escaped.push_str(&self.text[run..self.at]);
                }
            }
        }
    }

    fn number(&mut self) -> Result<(), Fail> {
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
        let node = if float {
            // Rust's float parsing is correctly rounded, as orjson's; orjson rejects infinities.
            let value: f64 = text.parse().map_err(|_| Fail)?;
            if !value.is_finite() {
                return Err(Fail);
            }
            Node::Float(value)
        } else {
            // Beyond int64 orjson gives a Python int (up to 2**64) or a float: left to the Python reader.
            Node::Int(text.parse::<i64>().map_err(|_| Fail)?)
        };
        self.tape.nodes.push(node);
        Ok(())
    }
}

#[cfg(test)]
#[path = "tests/json.rs"]
mod tests;
