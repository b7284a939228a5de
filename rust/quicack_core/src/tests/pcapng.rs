//! pcapng.rs against pcap-parser's pcapng reader (issue 37, goal 5: a maintained crate where it is as fast). Not
//! a test of behaviour (tests/test_pcap_pcapng_lane.py compares the lane with the Python reader): a timing, run on
//! demand on a real capture,
//!     QUICACK_PCAPNG_BENCH=<file.pcapng> cargo test --release pcapng_reading_speed -- --ignored --nocapture
//! Both read the file in 1 MiB chunks and give, per packet, its interface's link type, its time in nanoseconds
//! (if_tsresol, if_tsoffset) and its bytes; the sums must agree.

use std::time::Instant;

use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{Block, PcapBlockOwned, PcapError, PcapNGReader};
use pyo3::Python;

use super::{Block as Block_, *};

/// (packets, sum of times, sum of captured bytes, sum of link types) by pcapng.rs (the lane's block reading).
fn ours(path: &std::path::Path) -> (u64, i128, u64, u64) {
    Python::with_gil(|py| {
        let mut head = [0u8; 4];
        std::io::Read::read_exact(&mut std::fs::File::open(path).unwrap(), &mut head).unwrap();
        let mut lane = PcapLane::new_pcapng(py.None(), &head, u32::MAX, Some(path.to_path_buf())).unwrap();
        let mut sums = (0u64, 0i128, 0u64, 0u64);
        loop {
            match lane.next_block(py).unwrap() {
                Block_::Lane(Next::Record(_, time, start, end, _)) => {
                    sums.0 += 1;
                    sums.1 += i128::from(time);
                    sums.2 += (end - start) as u64;
                    sums.3 += u64::from(lane.linktype);
                }
                Block_::Lane(_) => return sums,
                Block_::Issue(_, message) => panic!("{message}"),
                Block_::Secrets(..) => {}
            }
        }
    })
}

/// The same by pcap-parser's PcapNGReader, the way its documentation reads a file.
fn pcap_parser_reader(path: &std::path::Path) -> (u64, i128, u64, u64) {
    let mut reader = PcapNGReader::new(1 << 20, std::fs::File::open(path).unwrap()).unwrap();
    let mut interfaces: Vec<(u64, u64, i64)> = Vec::new(); // link type, ticks per second, offset s
    let mut sums = (0u64, 0i128, 0u64, 0u64);
    loop {
        match reader.next() {
            Ok((offset, block)) => {
                match block {
                    PcapBlockOwned::NG(Block::SectionHeader(_)) => interfaces.clear(),
                    PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => interfaces.push((
                        idb.linktype.0 as u64,
                        idb.ts_resolution().unwrap(),
                        idb.ts_offset(),
                    )),
                    PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                        let (linktype, ticks, offset_s) = interfaces[epb.if_id as usize];
                        let stamp = (u128::from(epb.ts_high) << 32) | u128::from(epb.ts_low);
                        let time = (stamp * 1_000_000_000 / u128::from(ticks)) as i128 + i128::from(offset_s) * 1_000_000_000;
                        sums.0 += 1;
                        sums.1 += time;
                        sums.2 += u64::from(epb.caplen.min(epb.data.len() as u32));
                        sums.3 += linktype;
                    }
                    _ => {}
                }
                reader.consume(offset);
            }
            Err(PcapError::Eof) => return sums,
            Err(PcapError::Incomplete(_)) => reader.refill().unwrap(),
            Err(error) => panic!("{error:?}"),
        }
    }
}

#[test]
#[ignore = "a timing on a capture named by QUICACK_PCAPNG_BENCH"]
fn pcapng_reading_speed() {
    pyo3::prepare_freethreaded_python();
    let path = std::path::PathBuf::from(std::env::var("QUICACK_PCAPNG_BENCH").expect("QUICACK_PCAPNG_BENCH"));
    let rounds: usize = std::env::var("QUICACK_PCAPNG_ROUNDS").map_or(7, |v| v.parse().unwrap());
    let (mut ours_s, mut theirs_s) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let start = Instant::now();
        let a = ours(&path);
        ours_s.push(start.elapsed().as_secs_f64());
        let start = Instant::now();
        let b = pcap_parser_reader(&path);
        theirs_s.push(start.elapsed().as_secs_f64());
        assert_eq!(a, b);
    }
    ours_s.sort_by(f64::total_cmp);
    theirs_s.sort_by(f64::total_cmp);
    let (middle, size) = (rounds / 2, std::fs::metadata(&path).unwrap().len() as f64 / 1e6);
    println!(
        "{size:.1} MB, {rounds} alternating rounds: pcapng.rs {:.4} s best / {:.4} median ({:.0} MB/s), \
         pcap-parser {:.4} s best / {:.4} median ({:.0} MB/s)",
        ours_s[0], ours_s[middle], size / ours_s[0], theirs_s[0], theirs_s[middle], size / theirs_s[0]
    );
}
