//! Record splitting as `records._separated` does it: offsets, the last record without a separator, records
//! across chunk boundaries, over-long records dropped while streaming.

use super::*;

/// All records of `chunks` as (text, offset, last), TooLong as ("<too long N>", offset, false).
fn split(separator: u8, max_record: u64, chunks: &[&[u8]]) -> Vec<(String, u64, bool)> {
    let mut splitter = Splitter::new(separator, max_record);
    let mut out = Vec::new();
    let mut chunks = chunks.iter();
    loop {
        match splitter.next() {
            Split::Need => splitter.feed(chunks.next().copied().unwrap_or(b"")),
            Split::End => return out,
            Split::Record { start, end, offset, last } => {
                out.push((String::from_utf8_lossy(&splitter.buf[start..end]).into_owned(), offset, last));
            }
            Split::TooLong { offset, length } => out.push((format!("<too long {length}>"), offset, false)),
        }
    }
}

fn owned(records: &[(&str, u64, bool)]) -> Vec<(String, u64, bool)> {
    records.iter().map(|(text, offset, last)| (text.to_string(), *offset, *last)).collect()
}

#[test]
fn json_seq_records_with_their_offsets() {
    let records = split(0x1e, 100, &[b"\x1e{\"a\":1}\n\x1e{\"b\":2}\n"]);
    // The empty part before the first RS is a record too; the lane skips blank ones.
    assert_eq!(records, owned(&[("", 0, false), ("{\"a\":1}\n", 1, false), ("{\"b\":2}\n", 10, true)]));
}

#[test]
fn records_across_chunk_boundaries_are_whole() {
    let records = split(b'\n', 100, &[b"{\"a\"", b":1}\n{\"b\":", b"2}", b"\n"]);
    assert_eq!(records, owned(&[("{\"a\":1}", 0, false), ("{\"b\":2}", 8, false)]));
}

#[test]
fn a_last_record_without_a_separator_is_kept() {
    let records = split(b'\n', 100, &[b"{}\n{\"cut\""]);
    assert_eq!(records, owned(&[("{}", 0, false), ("{\"cut\"", 3, true)]));
}

#[test]
fn an_over_long_record_is_dropped_as_it_streams_by() {
    let long = [b'x'; 25];
    let records = split(b'\n', 10, &[b"{}\n", &long[..12], &long[12..], b"\n{\"next\":1}\n"]);
    assert_eq!(records, owned(&[("{}", 0, false), ("<too long 25>", 3, false), ("{\"next\":1}", 29, false)]));
}

#[test]
fn blank_is_pythons_bytes_isspace() {
    assert!(blank(b"") && blank(b" \t\r\n\x0b\x0c"));
    assert!(!blank(b" x ") && !blank(b"\x1e"));
}

#[test]
fn a_byte_order_mark_is_stripped_from_the_first_record_only() {
    // JSON-SEQ: the mark before the first RS is a record of its own, blank once stripped.
    assert!(blank(record_text(b"\xef\xbb\xbf", 0, false)));
    // NDJSON: the mark, then quic-go's RS, then the text.
    assert_eq!(record_text(b"\xef\xbb\xbf\x1e{\"a\":1}", 0, true), b"{\"a\":1}");
    assert_eq!(record_text(b"\xef\xbb\xbf{\"a\":1}", 0, false), b"{\"a\":1}");
    // Anywhere else it is the record's own bytes (and fails to parse there, as in the Python reader).
    assert_eq!(record_text(b"\xef\xbb\xbf{}", 7, false), b"\xef\xbb\xbf{}");
    assert_eq!(record_text(b"\x1e{}", 7, false), b"\x1e{}");
    assert_eq!(record_text(b"\x1e{}", 7, true), b"{}");
}
