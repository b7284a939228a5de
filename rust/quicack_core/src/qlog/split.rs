//! Record splitting (`records._separated`): records between separators, with their stream offsets; a record
//! longer than max_record_bytes is dropped as it streams by and reported by its length.

pub enum Split {
    Need,
    End,
    Record { start: usize, end: usize, offset: u64, last: bool },
    TooLong { offset: u64, length: u64 },
}

pub struct Splitter {
    pub buf: Vec<u8>, // the unsplit stream from the open record on; records are spans of it
    start: usize,  // of the open record in buf
    scan: usize,   // buf is searched for the separator from here
    offset: u64,   // stream offset of the open record
    dropped: u64,  // bytes of the open record already dropped (it is too long)
    eof: bool,
    pub separator: u8,
    max_record: u64,
    pub next_offset: u64,
}

impl Splitter {
    pub fn new(separator: u8, max_record: u64) -> Self {
        Splitter { buf: Vec::new(), start: 0, scan: 0, offset: 0, dropped: 0, eof: false, separator, max_record, next_offset: 0 }
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            self.eof = true;
            return;
        }
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.scan -= self.start;
            self.start = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    fn finish(&mut self, end: usize, last: bool) -> Split {
        let length = self.dropped + (end - self.start) as u64;
        let offset = self.offset;
        let out = if self.dropped > 0 || length > self.max_record {
            Split::TooLong { offset, length }
        } else {
            Split::Record { start: self.start, end, offset, last }
        };
        self.offset = offset + length + 1;
        self.next_offset = self.offset;
        self.dropped = 0;
        out
    }

    pub fn next(&mut self) -> Split {
        let separator = self.separator;
        // memchr: a byte-by-byte search was half of the lane's own time outside parsing and the events (perf)
        match memchr::memchr(separator, &self.buf[self.scan..]) {
            Some(p) => {
                let end = self.scan + p;
                let out = self.finish(end, false);
                self.start = end + 1;
                self.scan = self.start;
                out
            }
            None if self.eof => {
                let end = self.buf.len();
                if self.dropped == 0 && end == self.start {
                    return Split::End;
                }
                let out = self.finish(end, true);
                self.start = end;
                self.scan = end;
                out
            }
            None => {
                self.scan = self.buf.len();
                let open = (self.buf.len() - self.start) as u64;
                if self.dropped + open > self.max_record {
                    self.dropped += open;
                    self.start = self.buf.len();
                    self.scan = self.start;
                }
                Split::Need
            }
        }
    }
}

/// The UTF-8 byte order mark some writers start a text file with (JSON readers ignore it there, RFC 8259 §8.1).
const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

/// A record without what precedes its JSON text (`records.record_text`): the byte order mark a file may start with
/// (the record at stream offset 0), and in NDJSON (`lines`) the RS quic-go v0.3x wrote before each line.
pub fn record_text(part: &[u8], offset: u64, lines: bool) -> &[u8] {
    let part = if offset == 0 { part.strip_prefix(UTF8_BOM).unwrap_or(part) } else { part };
    if lines && part.first() == Some(&0x1e) {
        &part[1..]
    } else {
        part
    }
}

/// bytes.isspace() of Python (and true for empty).
pub fn blank(part: &[u8]) -> bool {
    part.iter().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
}

#[cfg(test)]
#[path = "../tests/qlog_split.rs"]
mod tests;
