//! The pcap lane's record framing (pcap-parser) on hand-made classic pcap files: both byte orders, micro- and
//! nanosecond stamps, and the damage `reader._read_pcap` reports (a cut header, a cut record, an implausible
//! length). Hand-made: the damaged files cannot be recorded, and the framing, not the traffic, is under test.

use pyo3::Python;

use super::*;
use crate::link::LINKTYPE_RAW;

fn file_header(big_endian: bool, nanoseconds: bool) -> Vec<u8> {
    let magic: u32 = if nanoseconds { 0xA1B2_3C4D } else { 0xA1B2_C3D4 };
    let u16s = |v: u16| if big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
    let u32s = |v: u32| if big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
    let mut out = u32s(magic).to_vec();
    out.extend(u16s(2)); // version 2.4
    out.extend(u16s(4));
    for field in [0, 0, 65535, LINKTYPE_RAW] {
        out.extend(u32s(field)); // thiszone, sigfigs, snaplen, linktype
    }
    out
}

fn record(big_endian: bool, seconds: u32, fraction: u32, data: &[u8], wire: u32) -> Vec<u8> {
    let mut out = Vec::new();
    for field in [seconds, fraction, data.len() as u32, wire] {
        out.extend(if big_endian { field.to_be_bytes() } else { field.to_le_bytes() });
    }
    out.extend_from_slice(data);
    out
}

/// A record as the lane frames it: (number, time ns, bytes, wire length), or the issue that ends the file.
type Framed = Result<(i64, i64, Vec<u8>, i64), String>;

fn frame_all(bytes: &[u8], max_record_bytes: u32) -> Vec<Framed> {
    pyo3::prepare_freethreaded_python();
    let path = std::env::temp_dir().join(format!("quicack-core-test-{}-{}.pcap", std::process::id(), bytes.len()));
    std::fs::write(&path, bytes).unwrap();
    let out = Python::with_gil(|py| {
        let mut lane = PcapLane::new(py.None(), &bytes[..24], max_record_bytes, Some(path.clone())).unwrap();
        let mut out = Vec::new();
        loop {
            match lane.next_record(py).unwrap() {
                Next::Record(number, time, start, end, wire) => {
                    out.push(Ok((number, time, lane.buffer[start..end].to_vec(), wire)))
                }
                Next::Issue(number, message) => out.push(Err(format!("{number}: {message}"))),
                Next::Implausible(number, length) => out.push(Err(format!("{number}: implausible {length}"))),
                Next::End => break,
            }
        }
        out
    });
    std::fs::remove_file(path).unwrap();
    out
}

#[test]
fn records_of_both_byte_orders_and_stamp_units() {
    for (big_endian, nanoseconds) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut file = file_header(big_endian, nanoseconds);
        file.extend(record(big_endian, 1_700_000_000, 250, b"\x45first", 60));
        file.extend(record(big_endian, 1_700_000_001, 0, b"", 0));
        let unit = if nanoseconds { 1 } else { 1000 };
        assert_eq!(
            frame_all(&file, 1 << 20),
            [Ok((1, 1_700_000_000_000_000_000 + 250 * unit, b"\x45first".to_vec(), 60)), Ok((2, 1_700_000_001_000_000_000, vec![], 0))],
            "big endian {big_endian}, nanoseconds {nanoseconds}"
        );
    }
}

#[test]
fn a_record_larger_than_a_chunk_is_read_whole() {
    let mut file = file_header(false, false);
    let big = vec![0xab; CHUNK_BYTES + 100];
    file.extend(record(false, 1, 0, &big, big.len() as u32));
    file.extend(record(false, 2, 0, b"after", 5));
    let records = frame_all(&file, 0x400_0000);
    assert_eq!(records.len(), 2);
    assert_eq!(records[0].as_ref().unwrap().2.len(), CHUNK_BYTES + 100);
    assert_eq!(records[1].as_ref().unwrap().2, b"after");
}

#[test]
fn cut_and_implausible_records_end_the_file_with_an_issue() {
    let mut file = file_header(false, false);
    file.extend(record(false, 1, 0, b"whole", 5));
    let whole = file.clone();
    let mut cut_header = whole.clone();
    cut_header.extend(&record(false, 2, 0, b"x", 1)[..10]);
    assert_eq!(frame_all(&cut_header, 1 << 20)[1], Err("2: capture ends inside a record header (truncated file)".into()));
    let mut cut_record = whole.clone();
    cut_record.extend(&record(false, 2, 0, b"0123456789", 10)[..20]);
    assert_eq!(frame_all(&cut_record, 1 << 20)[1], Err("2: capture ends inside a record (truncated file)".into()));
    let mut too_long = whole.clone();
    too_long.extend(record(false, 2, 0, &[0; 300], 300));
    assert_eq!(frame_all(&too_long, 200)[1], Err("2: implausible 300".into()));
    let mut too_long_cut = whole;
    too_long_cut.extend(&record(false, 2, 0, &[0; 300], 300)[..40]); // not even there: still implausible
    assert_eq!(frame_all(&too_long_cut, 200)[1], Err("2: implausible 300".into()));
}
