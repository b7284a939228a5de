//! pcapng for the pcap lane: the blocks of a pcapng stream cut into link-layer records, twin of
//! `quicack.pcap.pcapng.read_pcapng` (same record numbers, times, link types, issue messages and resynchronisation
//! after a corrupt block), so that the lane reads pcapng captures as it reads classic pcap.
//!
//! Blocks: Section Header (both byte orders; a new section forgets its interfaces), Interface Description (link
//! type, if_tsresol, if_tsoffset), Enhanced Packet, Simple Packet, the obsolete Packet Block, Decryption Secrets
//! (TLS key logs handed to the Python decoder); Name Resolution, Interface Statistics, custom and unknown blocks
//! are skipped. A child module of `engine`: it reads the lane's own buffer.
//!
//! Own code rather than pcap-parser's pcapng parser (which the classic framing uses): pcap-parser has no Packet
//! Block, rejects a whole block whose options or captured length do not fit (the Python reader keeps the packet)
//! and collects every block's options into a vector; see bench/README.md for the measurement.

use std::collections::HashMap;
use std::io::Seek;

use pyo3::prelude::*;

use super::{Next, PcapLane, CHUNK_BYTES};

pub const SHB_BYTES: [u8; 4] = [0x0A, 0x0D, 0x0D, 0x0A];
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
const BYTE_ORDER_MAGIC_SWAPPED: u32 = 0x4D3C_2B1A;
const IDB: u32 = 0x0000_0001;
const PB: u32 = 0x0000_0002; // obsolete Packet Block: an EPB with 16-bit interface id and drops count
const SPB: u32 = 0x0000_0003;
const NRB: u32 = 0x0000_0004;
const ISB: u32 = 0x0000_0005;
const EPB: u32 = 0x0000_0006;
const DSB: u32 = 0x0000_000A;
const CUSTOM_COPYABLE: u32 = 0x0000_0BAD;
const CUSTOM_NOT_COPYABLE: u32 = 0x4000_0BAD;
const DSB_TLS_KEYLOG: u32 = 0x544C_534B;
const KNOWN_BLOCK_TYPES: [u32; 9] = [IDB, PB, SPB, NRB, ISB, EPB, DSB, CUSTOM_COPYABLE, CUSTOM_NOT_COPYABLE];
const OPTION_END: u16 = 0;
const OPTION_IF_TSRESOL: u16 = 9;
const OPTION_IF_TSOFFSET: u16 = 14;
const PAST_THE_END: &str = "runs past the end of the file";

/// Smallest body (after type and length, before the trailing length) each block type needs to be read.
fn min_body_bytes(block_type: u32) -> Option<u32> {
    match block_type {
        IDB => Some(8),
        PB | EPB => Some(20),
        SPB => Some(4),
        DSB => Some(8),
        _ => None,
    }
}

/// Timestamp units per second of an interface.
#[derive(Clone, Copy)]
enum Ticks {
    Per(u128),
    /// more than 10^38 per second (if_tsresol up to 10^127): every 64-bit stamp is below one nanosecond
    Beyond,
}

struct Interface {
    linktype: u32,
    ticks: Ticks,
    offset_s: i64,
}

/// The reading state of a pcapng stream.
pub struct Blocks {
    big_endian: bool,
    interfaces: Vec<Interface>,
    eof: bool,
}

impl Blocks {
    pub fn new() -> Self {
        Blocks { big_endian: false, interfaces: Vec::new(), eof: false }
    }
}

/// What the next block gave the lane.
pub enum Block {
    /// a record (`Next::Record`, its link type in the lane's `linktype`) or the end
    Lane(Next),
    Issue(Option<i64>, String),
    /// a Decryption Secrets Block's TLS key log: its bytes in the lane's buffer
    Secrets(usize, usize),
}

fn u32_at(data: &[u8], at: usize, big_endian: bool) -> u32 {
    let bytes = [data[at], data[at + 1], data[at + 2], data[at + 3]];
    if big_endian { u32::from_be_bytes(bytes) } else { u32::from_le_bytes(bytes) }
}

fn u16_at(data: &[u8], at: usize, big_endian: bool) -> u16 {
    let bytes = [data[at], data[at + 1]];
    if big_endian { u16::from_be_bytes(bytes) } else { u16::from_le_bytes(bytes) }
}

/// 0 (no record yet) as None, as the Python reader's `number or None`.
fn record_or_none(number: i64) -> Option<i64> {
    (number != 0).then_some(number)
}

/// (ticks per second, seconds added) of an Interface Description Block's options: if_tsresol (default
/// microseconds) and if_tsoffset (a signed 64-bit number of seconds; default 0).
fn timestamp_options(options: &[u8], big_endian: bool) -> (Ticks, i64) {
    let (mut ticks, mut offset_s) = (Ticks::Per(1_000_000), 0i64);
    let mut position = 0usize;
    while position + 4 <= options.len() {
        let code = u16_at(options, position, big_endian);
        let length = usize::from(u16_at(options, position + 2, big_endian));
        if code == OPTION_END {
            break;
        }
        let value = &options[position + 4..(position + 4 + length).min(options.len())];
        if code == OPTION_IF_TSRESOL && !value.is_empty() {
            let resolution = u32::from(value[0]);
            ticks = if resolution & 0x80 != 0 {
                Ticks::Per(1u128 << (resolution & 0x7F))
            } else {
                10u128.checked_pow(resolution).map_or(Ticks::Beyond, Ticks::Per)
            };
        } else if code == OPTION_IF_TSOFFSET && value.len() == 8 {
            let bytes: [u8; 8] = value.try_into().expect("8 bytes");
            offset_s = if big_endian { i64::from_be_bytes(bytes) } else { i64::from_le_bytes(bytes) };
        }
        position += 4 + ((length + 3) & !3);
    }
    (ticks, offset_s)
}

/// Nanoseconds of a stamp, or None outside int64 (the tables' type).
fn time_ns(ticks_total: u64, interface: &Interface) -> Option<i64> {
    let ticks_total = u128::from(ticks_total);
    let ns = match interface.ticks {
        Ticks::Per(1_000_000_000) => ticks_total,
        Ticks::Per(ticks) => ticks_total * 1_000_000_000 / ticks, // < 2^64 · 10^9: no overflow
        Ticks::Beyond => 0,
    };
    let time = ns as i128 + i128::from(interface.offset_s) * 1_000_000_000;
    (time.abs() <= i128::from(i64::MAX)).then_some(time as i64)
}

impl PcapLane {
    /// A lane on a pcapng stream whose first bytes `head` were read already (from `path` too when given: the
    /// lane then reads the file itself from there on).
    pub(super) fn new_pcapng(
        stream: Py<PyAny>,
        head: &[u8],
        max_record_bytes: u32,
        path: Option<std::path::PathBuf>,
    ) -> PyResult<Self> {
        let file = match path {
            Some(path) => {
                let mut file = std::fs::File::open(path)?;
                file.seek(std::io::SeekFrom::Start(head.len() as u64))?;
                Some(file)
            }
            None => None,
        };
        Ok(PcapLane {
            stream,
            file,
            buffer: head.to_vec(),
            position: 0,
            consumed: 0,
            max_record_bytes,
            big_endian: false,
            nanoseconds: true,
            linktype: 0,
            number: 0,
            last_record: None,
            finished: false,
            flows: HashMap::new(),
            names: HashMap::new(),
            datagram_counts: [0, 0],
            pcapng: Some(Blocks::new()),
            cut: super::CutDatagrams::default(),
            tcp_segments: false,
            tcp_rows: None,
            texts: HashMap::new(),
            identifier: None,
        })
    }

    fn available(&self) -> usize {
        self.buffer.len() - self.position
    }

    /// True when at least `need` unread bytes are in the buffer (reads more when needed), as `_Window.fill`.
    fn fill(&mut self, py: Python<'_>, need: usize) -> PyResult<bool> {
        while self.available() < need && !self.ng().eof {
            let before = self.available();
            self.refill(py, CHUNK_BYTES.max(need - before))?;
            if self.available() == before {
                self.ng().eof = true;
            }
        }
        Ok(self.available() >= need)
    }

    fn ng(&mut self) -> &mut Blocks {
        self.pcapng.as_mut().expect("a pcapng lane")
    }

    /// The next record, issue or key log of a pcapng stream, as `read_pcapng` yields them.
    pub(super) fn next_block(&mut self, py: Python<'_>) -> PyResult<Block> {
        if self.finished {
            return Ok(Block::Lane(Next::End));
        }
        loop {
            if !self.fill(py, 1)? {
                self.finished = true;
                return Ok(Block::Lane(Next::End));
            }
            if !self.fill(py, 12)? {
                self.finished = true;
                let message = "capture ends inside a block header (truncated file)".to_string();
                return Ok(Block::Issue(record_or_none(self.number), message));
            }
            let at = self.position;
            let is_section = self.buffer[at..at + 4] == SHB_BYTES;
            if is_section {
                let big_endian = u32_at(&self.buffer, at + 8, false) != BYTE_ORDER_MAGIC;
                self.ng().big_endian = big_endian;
            }
            let big_endian = self.ng().big_endian;
            let block_type = u32_at(&self.buffer, at, big_endian);
            let total_length = u32_at(&self.buffer, at + 4, big_endian);
            let mut problem = self.framing_problem(py, big_endian, total_length)?;
            if problem.is_none() && !is_section {
                if let Some(minimum) = min_body_bytes(block_type) {
                    if total_length - 12 < minimum {
                        problem = Some(format!(
                            "block of type {block_type:#x} is {total_length} bytes, too short for its fields"
                        ));
                    }
                }
            }
            if let Some(problem) = problem {
                return self.resynchronise(py, big_endian, &problem);
            }
            let body = self.position + 8; // the framing check may have moved the buffer
            let body_end = self.position + total_length as usize - 4;
            self.position += total_length as usize;
            if is_section {
                self.ng().interfaces.clear();
                continue;
            }
            let data = &self.buffer;
            match block_type {
                IDB => {
                    let linktype = u32::from(u16_at(data, body, big_endian));
                    let (ticks, offset_s) = timestamp_options(&data[body + 8..body_end], big_endian);
                    self.ng().interfaces.push(Interface { linktype, ticks, offset_s });
                }
                EPB | PB => {
                    self.number += 1;
                    let (interface_id, ts_high, ts_low, caplen, wire_length) = if block_type == EPB {
                        let field = |index: usize| u32_at(data, body + 4 * index, big_endian);
                        (field(0), field(1), field(2), field(3), field(4))
                    } else {
                        let field = |index: usize| u32_at(data, body + 4 * index, big_endian);
                        (u32::from(u16_at(data, body, big_endian)), field(1), field(2), field(3), field(4))
                    };
                    let number = self.number;
                    let blocks = self.pcapng.as_ref().expect("a pcapng lane");
                    let Some(interface) = blocks.interfaces.get(interface_id as usize) else {
                        let message = format!("packet refers to unknown interface {interface_id}");
                        return Ok(Block::Issue(Some(number), message));
                    };
                    let Some(time) = time_ns((u64::from(ts_high) << 32) | u64::from(ts_low), interface) else {
                        let message = "packet time outside the years 1678-2262 (corrupt block): skipped";
                        return Ok(Block::Issue(Some(number), message.to_string()));
                    };
                    self.linktype = interface.linktype;
                    let start = body + 20;
                    let end = (start + caplen as usize).min(body_end);
                    return Ok(Block::Lane(Next::Record(number, time, start, end, i64::from(wire_length))));
                }
                SPB => {
                    self.number += 1;
                    let wire_length = u32_at(data, body, big_endian);
                    let blocks = self.pcapng.as_ref().expect("a pcapng lane");
                    let Some(interface) = blocks.interfaces.first() else {
                        let message = "simple packet block without interface".to_string();
                        return Ok(Block::Issue(Some(self.number), message));
                    };
                    self.linktype = interface.linktype;
                    let start = body + 4;
                    let end = (start + wire_length as usize).min(body_end);
                    return Ok(Block::Lane(Next::Record(self.number, 0, start, end, i64::from(wire_length))));
                }
                DSB if u32_at(data, body, big_endian) == DSB_TLS_KEYLOG => {
                    let length = u32_at(data, body + 4, big_endian) as usize;
                    let start = body + 8;
                    return Ok(Block::Secrets(start, (start + length).min(body_end)));
                }
                _ => {} // NRB, ISB, other secrets, custom and unknown blocks: nothing the decoder reads
            }
        }
    }

    /// Why the block at `position` is not a well-framed block; None when it is (and is whole in the buffer).
    fn framing_problem(&mut self, py: Python<'_>, big_endian: bool, total_length: u32) -> PyResult<Option<String>> {
        if total_length < 12 || total_length % 4 != 0 {
            return Ok(Some(format!("block length {total_length} is invalid")));
        }
        if total_length > self.max_record_bytes {
            return Ok(Some(format!(
                "block length {total_length} exceeds {} bytes (limits.max_record_bytes)",
                self.max_record_bytes
            )));
        }
        if !self.fill(py, total_length as usize)? {
            return Ok(Some(format!("block length {total_length} {PAST_THE_END}")));
        }
        let trailing = u32_at(&self.buffer, self.position + total_length as usize - 4, big_endian);
        if trailing != total_length {
            return Ok(Some(format!("block length {total_length} disagrees with its trailing copy {trailing}")));
        }
        Ok(None)
    }

    /// Skip forward to the next well-framed block of a known type; one issue for the bytes skipped.
    fn resynchronise(&mut self, py: Python<'_>, big_endian: bool, problem: &str) -> PyResult<Block> {
        let corrupt_at = self.consumed + self.position;
        let mut candidates: Vec<[u8; 4]> = KNOWN_BLOCK_TYPES
            .iter()
            .map(|block_type| if big_endian { block_type.to_be_bytes() } else { block_type.to_le_bytes() })
            .collect();
        candidates.push(SHB_BYTES);
        self.position += 1;
        loop {
            let found = self.buffer[self.position..]
                .windows(4)
                .position(|window| candidates.iter().any(|candidate| window == candidate));
            let Some(found) = found else {
                // Keep the last 3 bytes: a block type may straddle the chunk boundary.
                self.position = self.position.max(self.buffer.len().saturating_sub(3));
                let need = self.available() + 1;
                if self.ng().eof || !self.fill(py, need)? {
                    self.position = self.buffer.len();
                    return Ok(self.rest_skipped(corrupt_at, problem));
                }
                continue;
            };
            self.position += found;
            if !self.fill(py, 12)? {
                self.position = self.buffer.len();
                return Ok(self.rest_skipped(corrupt_at, problem));
            }
            let at = self.position;
            let mut candidate_big_endian = big_endian;
            if self.buffer[at..at + 4] == SHB_BYTES {
                let magic = u32_at(&self.buffer, at + 8, false);
                if magic != BYTE_ORDER_MAGIC && magic != BYTE_ORDER_MAGIC_SWAPPED {
                    self.position += 1;
                    continue;
                }
                candidate_big_endian = magic != BYTE_ORDER_MAGIC;
            }
            let total_length = u32_at(&self.buffer, at + 4, candidate_big_endian);
            if self.framing_problem(py, candidate_big_endian, total_length)?.is_none() {
                let offset = self.consumed + self.position;
                let message = format!(
                    "corrupt pcapng block at byte {corrupt_at} ({problem}); skipped {} bytes to the next valid block \
                     at byte {offset}",
                    offset - corrupt_at
                );
                return Ok(Block::Issue(record_or_none(self.number), message));
            }
            self.position += 1;
        }
    }

    fn rest_skipped(&mut self, corrupt_at: usize, problem: &str) -> Block {
        self.finished = true;
        let message = if problem.ends_with(PAST_THE_END) {
            // no well-framed block follows a block that runs past the end: the file was cut (a capture stopped
            // mid-write), the common case, and worth its own words
            format!("capture ends inside the block at byte {corrupt_at} (truncated file): {problem}")
        } else {
            format!(
                "corrupt pcapng block at byte {corrupt_at} ({problem}); no valid block after it: the rest of the file \
                 is skipped"
            )
        };
        Block::Issue(record_or_none(self.number), message)
    }
}

#[cfg(test)]
#[path = "tests/pcapng.rs"]
mod tests;
