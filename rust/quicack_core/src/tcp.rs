//! A TCP segment's header fields and option sizes, twin of `quicack.pcap.tcp.tcp_segment` / `split_options`, for
//! the pcap lane (engine.rs): the segments that `tcp_segment` reads without an issue; None for any other (the
//! record then goes to the Python reader, which reports it). `TcpRows`, twin of `quicack.pcap.tcp.TcpRows`: the
//! segments as rows (connection, direction, index, time), filled by the lane and by the Python reader alike.

use std::collections::HashMap;
use std::sync::Arc;

use pyo3::prelude::*;

use crate::arrow::{ArrowTable, Column};
use crate::rows::DIRECTIONS;

const TCP_SYN: u8 = 0x02;
const TCP_ACK: u8 = 0x10;
const C2S: u8 = 0;
const S2C: u8 = 1;

const TCP_FIXED_HEADER_BYTES: usize = 20;
const OPTION_END: u8 = 0;
const OPTION_NOP: u8 = 1;
const OPTION_SACK: u8 = 5;
const OPTION_TIMESTAMPS: u8 = 8;
const TIMESTAMPS: usize = 0;
const SACK: usize = 1;
const OTHER: usize = 2;
const SACK_BLOCK_BYTES: usize = 8;

/// The fields of `tcp.TcpSegment` after its addresses (src_port .. window), in its order.
#[derive(Debug, PartialEq, Eq)]
pub struct TcpFields {
    pub src_port: u16,
    pub dst_port: u16,
    pub header_bytes: usize,
    pub timestamp_option_bytes: usize,
    pub sack_option_bytes: usize,
    pub other_option_bytes: usize,
    pub sack_blocks: usize,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
}

/// (timestamp, SACK, other option bytes, SACK blocks) of an options area, as `tcp.split_options` (whose NOP and
/// EOL padding rules it follows); None where that returns None.
fn split_options(options: &[u8], length: usize) -> Option<([usize; 3], usize)> {
    if options.len() < length {
        return None;
    }
    let mut sizes = [0usize; 3];
    let mut blocks = 0;
    let mut padding = 0;
    let mut last = OTHER;
    let mut at = 0;
    while at < length {
        let kind = options[at];
        if kind == OPTION_NOP {
            padding += 1;
            at += 1;
            continue;
        }
        if kind == OPTION_END {
            padding += length - at;
            break;
        }
        if at + 1 >= length || options[at + 1] < 2 || at + usize::from(options[at + 1]) > length {
            return None;
        }
        let size = usize::from(options[at + 1]);
        last = match kind {
            OPTION_TIMESTAMPS => TIMESTAMPS,
            OPTION_SACK => SACK,
            _ => OTHER,
        };
        if last == SACK {
            blocks = (size - 2) / SACK_BLOCK_BYTES;
        }
        sizes[last] += padding + size;
        padding = 0;
        at += size;
    }
    sizes[last] += padding;
    Some((sizes, blocks))
}

/// The segment whose header starts at `data[at]` in an IP packet of `ip_bytes` bytes on the wire whose header is
/// `ip_header_bytes` long, as `tcp.tcp_segment` reads it; None where that gives an issue.
pub fn tcp_fields(data: &[u8], at: usize, ip_header_bytes: usize, ip_bytes: usize) -> Option<TcpFields> {
    if data.len() < at + TCP_FIXED_HEADER_BYTES {
        return None;
    }
    let header = &data[at..at + TCP_FIXED_HEADER_BYTES];
    let header_bytes = usize::from(header[12] >> 4) * 4;
    if header_bytes < TCP_FIXED_HEADER_BYTES || ip_header_bytes + header_bytes > ip_bytes {
        return None;
    }
    let options_length = header_bytes - TCP_FIXED_HEADER_BYTES;
    let (sizes, sack_blocks) = if options_length > 0 {
        let options = &data[(at + TCP_FIXED_HEADER_BYTES).min(data.len())..(at + header_bytes).min(data.len())];
        split_options(options, options_length)?
    } else {
        ([0; 3], 0)
    };
    let u16_at = |i: usize| u16::from_be_bytes([header[i], header[i + 1]]);
    let u32_at = |i: usize| u32::from_be_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
    Some(TcpFields {
        src_port: u16_at(0),
        dst_port: u16_at(2),
        header_bytes,
        timestamp_option_bytes: sizes[TIMESTAMPS],
        sack_option_bytes: sizes[SACK],
        other_option_bytes: sizes[OTHER],
        sack_blocks,
        seq: u32_at(4),
        ack: u32_at(8),
        flags: header[13],
        window: u16_at(14),
    })
}

/// A segment as `TcpRows` takes it: `tcp.TcpSegment`'s fields but the record number.
pub struct Segment<'a> {
    pub time_abs_ns: i64,
    pub src: &'a Arc<str>,
    pub dst: &'a Arc<str>,
    pub ip_bytes: i64,
    pub ip_header_bytes: i64,
    pub fields: TcpFields,
}

struct TcpFlow {
    connection: Arc<str>,
    direction: u8,
    origin_ns: i64, // the connection's first segment in this capture
}

/// The rows of `tcp.TcpRows` (its `_ROW_COLUMNS`, in order), and its flows and per-direction counts.
#[pyclass(module = "quicack_core", name = "TcpRows")]
#[derive(Default)]
pub struct TcpRows {
    flows: HashMap<(Arc<str>, u16, Arc<str>, u16), TcpFlow>,
    counts: HashMap<(Arc<str>, u8), i64>,
    #[pyo3(get)]
    total: i64,
    connection: Vec<Arc<str>>,
    direction: Vec<u8>,
    time_ms: Vec<f64>,
    // segment_index, time_abs_ns, ip_bytes, ip_header_bytes, option_bytes, timestamp_option_bytes,
    // sack_option_bytes, other_option_bytes, seq, ack, flags, sack_blocks, window
    integers: [Vec<i64>; 13],
}

const INTEGER_COLUMNS: [&str; 13] = [
    "segment_index",
    "time_abs_ns",
    "ip_bytes",
    "ip_header_bytes",
    "option_bytes",
    "timestamp_option_bytes",
    "sack_option_bytes",
    "other_option_bytes",
    "seq",
    "ack",
    "flags",
    "sack_blocks",
    "window",
];

impl TcpRows {
    /// One segment's row, as `tcp.TcpRows.add` (its flow found or made as `_flow` makes it).
    pub fn push(&mut self, segment: Segment<'_>) {
        let fields = &segment.fields;
        let forward = (segment.src.clone(), fields.src_port, segment.dst.clone(), fields.dst_port);
        let (connection, direction, origin_ns) = match self.flows.get(&forward) {
            Some(flow) => (flow.connection.clone(), flow.direction, flow.origin_ns),
            None => {
                // The SYN's sender is the client; a capture that starts later: the side with the higher
                // (ephemeral) port.
                let client_is_src = if fields.flags & TCP_SYN != 0 {
                    fields.flags & TCP_ACK == 0
                } else {
                    fields.src_port > fields.dst_port
                };
                let client: Arc<str> = if client_is_src {
                    Arc::from(format!("{}:{}", segment.src, fields.src_port))
                } else {
                    Arc::from(format!("{}:{}", segment.dst, fields.dst_port))
                };
                let (there, back) = if client_is_src { (C2S, S2C) } else { (S2C, C2S) };
                let backward = (segment.dst.clone(), fields.dst_port, segment.src.clone(), fields.src_port);
                let origin_ns = segment.time_abs_ns;
                // forward, then backward (the same key for a segment to itself: backward's stays, as in Python)
                self.flows.insert(forward, TcpFlow { connection: client.clone(), direction: there, origin_ns });
                self.flows.insert(backward, TcpFlow { connection: client.clone(), direction: back, origin_ns });
                (client, there, origin_ns)
            }
        };
        let count = self.counts.entry((connection.clone(), direction)).or_insert(0);
        *count += 1;
        self.total += 1;
        self.connection.push(connection);
        self.direction.push(direction);
        self.time_ms.push((segment.time_abs_ns - origin_ns) as f64 / 1e6);
        let values = [
            *count,
            segment.time_abs_ns,
            segment.ip_bytes,
            segment.ip_header_bytes,
            fields.header_bytes as i64 - TCP_FIXED_HEADER_BYTES as i64,
            fields.timestamp_option_bytes as i64,
            fields.sack_option_bytes as i64,
            fields.other_option_bytes as i64,
            i64::from(fields.seq),
            i64::from(fields.ack),
            i64::from(fields.flags),
            fields.sack_blocks as i64,
            i64::from(fields.window),
        ];
        for (column, value) in self.integers.iter_mut().zip(values) {
            column.push(value);
        }
    }
}

#[pymethods]
impl TcpRows {
    #[new]
    fn new() -> Self {
        TcpRows::default()
    }

    /// A `tcp.TcpSegment` read by the Python reader (one the lane leaves to it).
    fn add(&mut self, segment: &Bound<'_, PyAny>) -> PyResult<()> {
        let text = |name: &str| -> PyResult<Arc<str>> { Ok(Arc::from(segment.getattr(name)?.extract::<&str>()?)) };
        let (src, dst) = (text("src")?, text("dst")?);
        let int = |name: &str| -> PyResult<i64> { segment.getattr(name)?.extract() };
        let fields = TcpFields {
            src_port: segment.getattr("src_port")?.extract()?,
            dst_port: segment.getattr("dst_port")?.extract()?,
            header_bytes: segment.getattr("header_bytes")?.extract()?,
            timestamp_option_bytes: segment.getattr("timestamp_option_bytes")?.extract()?,
            sack_option_bytes: segment.getattr("sack_option_bytes")?.extract()?,
            other_option_bytes: segment.getattr("other_option_bytes")?.extract()?,
            sack_blocks: segment.getattr("sack_blocks")?.extract()?,
            seq: segment.getattr("seq")?.extract()?,
            ack: segment.getattr("ack")?.extract()?,
            flags: segment.getattr("flags")?.extract()?,
            window: segment.getattr("window")?.extract()?,
        };
        self.push(Segment {
            time_abs_ns: int("time_abs_ns")?,
            src: &src,
            dst: &dst,
            ip_bytes: int("ip_bytes")?,
            ip_header_bytes: int("ip_header_bytes")?,
            fields,
        });
        Ok(())
    }

    /// The rows added since the last take, as an Arrow table of `tcp.TcpRows`' row columns (polars takes it
    /// without a Python object per value); the flows and counts stay.
    fn take(&mut self, py: Python<'_>) -> PyObject {
        let length = self.direction.len();
        let mut integers = INTEGER_COLUMNS.iter().zip(self.integers.iter_mut());
        let mut columns = vec![
            ("connection".to_string(), Column::Shared(std::mem::take(&mut self.connection))),
            ("direction".to_string(), Column::Codes(&DIRECTIONS, std::mem::take(&mut self.direction))),
        ];
        // in `_ROW_COLUMNS`' order: segment_index, time_ms, then the other integers
        let (name, values) = integers.next().expect("segment_index");
        columns.push((name.to_string(), Column::Dense(std::mem::take(values))));
        let time_ms = std::mem::take(&mut self.time_ms).into_iter().map(Some).collect();
        columns.push(("time_ms".to_string(), Column::Float(time_ms)));
        for (name, values) in integers {
            columns.push((name.to_string(), Column::Dense(std::mem::take(values))));
        }
        ArrowTable::new(columns, length).into_py(py)
    }
}

#[cfg(test)]
#[path = "tests/tcp.rs"]
mod tests;
