//! `QlogLane`: the compiled reader of a JSON-SEQ / NDJSON qlog, the twin of `quicack.qlog.reader`'s record loop,
//! `_FileReader._event` and `normalize.TraceConnection`'s handlers for the common events.
//!
//! The Python reader stays the authority. It feeds the (decompressed) byte stream to the lane chunk by chunk;
//! the lane splits the records as `records._separated` does, parses each with `json.rs` and, when the record is
//! an event of the common form on a connection the reader has registered, writes its rows into typed column
//! buffers of that connection, with the connection's state (origin, first times, ACK delay parameters, counts)
//! kept here. Any other record (a header, damage, a first event of a connection, a value of an unusual type)
//! goes back to the reader untouched, before anything was changed, and the reader handles it as it always does:
//! its connection objects read and write their state here (`get` / `set`), and the rows the lane buffered for a
//! connection move into the reader's Python lists before the reader adds a row of its own, so the rows stay in
//! event order.

use std::collections::HashMap;
use std::fmt::Write;

use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyList, PyLong, PyTuple};

use crate::arrow::{ArrowTable, Column};
use crate::json::{Obj, Tape, Value};

// Beyond this many ms from 0 an event time is corrupt (reader.MAX_TIME_MS).
const MAX_TIME_MS: f64 = 4.6e12;
// Ints above 2**53 in a float column: polars' strict conversion is left to the Python reader.
const EXACT_FLOAT_INT: i64 = 1 << 53;

const EVENTS: [&str; 2] = ["sent", "received"];
const PACKET_TYPES: [&str; 8] =
    ["initial", "handshake", "0rtt", "1rtt", "retry", "version_negotiation", "stateless_reset", "unknown"];
const P_INITIAL: u8 = 0;
const P_UNKNOWN: u8 = 7;
const PN_SPACES: [&str; 3] = ["initial", "handshake", "appdata"];
const FRAME_TYPES: [&str; 26] = [
    "padding", "ping", "ack", "reset_stream", "stop_sending", "crypto", "new_token", "stream", "max_data",
    "max_stream_data", "max_streams", "data_blocked", "stream_data_blocked", "streams_blocked",
    "new_connection_id", "retire_connection_id", "path_challenge", "path_response", "connection_close",
    "handshake_done", "datagram", "ack_frequency", "immediate_ack", "time_stamp", "reset_stream_at", "unknown",
];
const F_PADDING: u8 = 0;
const F_ACK: u8 = 2;
const F_CRYPTO: u8 = 5;
const F_STREAM: u8 = 7;
const F_CONNECTION_CLOSE: u8 = 18;
const F_HANDSHAKE_DONE: u8 = 19;
const F_DATAGRAM: u8 = 20;
const F_UNKNOWN: u8 = 25;

// normalize._PACKET_TYPES (its keys lowercased)
fn packet_type_code(lower: &str) -> u8 {
    match lower {
        "initial" => 0,
        "handshake" => 1,
        "0rtt" | "zerortt" | "zero_rtt" | "0rtt_protected" => 2,
        "1rtt" | "onertt" | "one_rtt" | "1rtt_protected" | "short" | "short_header" => 3,
        "retry" => 4,
        "version_negotiation" => 5,
        "stateless_reset" => 6,
        _ => P_UNKNOWN,
    }
}

// normalize._PN_SPACE
fn pn_space_of(packet_type: u8) -> Option<u8> {
    match packet_type {
        0 => Some(0),
        1 => Some(1),
        2 | 3 => Some(2),
        _ => None,
    }
}

// normalize._FRAME_TYPES
fn frame_type_code(lower: &str) -> u8 {
    if let Some(code) = FRAME_TYPES[..25].iter().position(|name| *name == lower) {
        return code as u8;
    }
    match lower {
        "ack_ecn" => F_ACK,
        "rst_stream" => 3,
        "crypto_frame" => F_CRYPTO,
        "max_streams_bidi" | "max_streams_uni" | "max_streams_bidir" | "max_streams_unidir" => 10,
        "blocked" => 11,
        "stream_blocked" => 12,
        "streams_blocked_bidi" | "streams_blocked_uni" => 13,
        "application_close" | "connection_close_app_err" => F_CONNECTION_CLOSE,
        "datagram_len" | "datagram_l" => F_DATAGRAM,
        _ => F_UNKNOWN,
    }
}

/// Why the lane hands a record back: it leaves the decision to the Python reader.
struct HandOff;

type Checked<T> = Result<T, HandOff>;

impl From<crate::json::Fail> for HandOff {
    fn from(_: crate::json::Fail) -> Self {
        HandOff
    }
}

/// The code of a type name (`packet_type_code` / `frame_type_code` of its ASCII lowercase); a non-string is
/// "unknown"; a non-ASCII string goes to Python (its Unicode lowercase may differ).
fn type_code(value: Option<Value>, lookup: fn(&str) -> u8, unknown: u8) -> Checked<u8> {
    match value {
        Some(Value::Str(s)) => {
            if !s.is_ascii() {
                return Err(HandOff);
            }
            if s.bytes().any(|b| b.is_ascii_uppercase()) {
                Ok(lookup(&s.to_ascii_lowercase()))
            } else {
                Ok(lookup(s))
            }
        }
        _ => Ok(unknown),
    }
}

/// normalize._int for the values the lane takes: ints, null, and what _int turns into None.
fn py_int(value: Option<Value>) -> Checked<Option<i64>> {
    match value {
        None | Some(Value::Null) | Some(Value::Bool(_)) | Some(Value::Array(_)) | Some(Value::Object(_)) => Ok(None),
        Some(Value::Int(i)) => Ok(Some(i)),
        Some(Value::Float(_)) | Some(Value::Str(_)) => Err(HandOff),
    }
}

/// normalize._num likewise.
fn py_num(value: Option<Value>) -> Checked<Option<f64>> {
    match value {
        None | Some(Value::Null) | Some(Value::Bool(_)) | Some(Value::Array(_)) | Some(Value::Object(_)) => Ok(None),
        Some(Value::Int(i)) => Ok(Some(i as f64)),
        Some(Value::Float(f)) => Ok(Some(f)),
        Some(Value::Str(_)) => Err(HandOff),
    }
}

/// A value the Python reader puts into an Int64 column as it is: only ints and nulls here.
fn raw_int(value: Option<Value>) -> Checked<Option<i64>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Int(i)) => Ok(Some(i)),
        _ => Err(HandOff),
    }
}

fn is_none(value: Option<Value>) -> bool {
    matches!(value, None | Some(Value::Null))
}

/// A number kept as the log wrote it (int or float) in a Float64 column: polars converts either the same way,
/// but the Python twin of a row must hold the same type.
#[derive(Clone, Copy)]
enum Num {
    I(i64),
    F(f64),
}

impl Num {
    fn float(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::F(f) => f,
        }
    }
}

/// A raw RTT metric (metrics scale 1.0): number or null.
fn raw_num(value: Option<Value>) -> Checked<Option<Num>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Int(i)) if i.abs() <= EXACT_FLOAT_INT => Ok(Some(Num::I(i))),
        Some(Value::Float(f)) => Ok(Some(Num::F(f))),
        _ => Err(HandOff),
    }
}

// ---------------------------------------------------------------------------------------------------------
// Row buffers of one connection, column by column (normalize.PACKET_COLUMNS, FRAME_COLUMNS, METRIC_COLUMNS).

#[derive(Default)]
struct PacketRows {
    event: Vec<u8>,
    t: Vec<f64>,
    packet_type: Vec<u8>,
    pn_space: Vec<Option<u8>>,
    packet_number: Vec<Option<i64>>,
    packet_bytes: Vec<Option<i64>>,
    aead_tag_bytes: Vec<Option<i64>>,
    ack_eliciting: Vec<Option<bool>>,
    frames_logged: Vec<bool>,
}

#[derive(Default)]
struct FrameRows {
    event: Vec<u8>,
    t: Vec<f64>,
    pn_space: Vec<Option<u8>>,
    packet_number: Vec<Option<i64>>,
    frame_index: Vec<i64>,
    frame_type: Vec<u8>,
    frame_bytes: Vec<Option<i64>>,
    ack_delay_ms: Vec<Option<f64>>,
    largest_acked: Vec<Option<i64>>,
    first_ack_range: Vec<Option<i64>>,
    ack_ranges: Vec<Option<String>>,
    stream_id: Vec<Option<i64>>,
    offset: Vec<Option<i64>>,
    length: Vec<Option<i64>>,
    fin: Vec<Option<bool>>,
    ack_reason: Vec<Option<String>>,
    ack_eliciting_since_previous_ack: Vec<Option<i64>>,
}

#[derive(Default)]
struct MetricRows {
    t: Vec<f64>,
    rtts: [Vec<Option<Num>>; 4], // smoothed, variance, latest, min
    pto_count: Vec<Option<i64>>,
    cwnd_bytes: Vec<Option<i64>>,
    bytes_in_flight: Vec<Option<i64>>,
}

#[derive(Default)]
struct Rows {
    packets: PacketRows,
    frames: FrameRows,
    metrics: MetricRows,
}

impl Rows {
    fn count(&self, table: usize) -> usize {
        match table {
            0 => self.packets.t.len(),
            1 => self.frames.t.len(),
            _ => self.metrics.t.len(),
        }
    }
}

const ACK_DELAY_MS: u8 = 0;
const ACK_DELAY_US: u8 = 1;
const ACK_DELAY_ENCODED: u8 = 2;
const ACK_DELAY_ENCODED_MS: u8 = 3; // neqo: the wire field / 1000, not scaled by the exponent

type AckKey = (Option<u8>, Option<i64>);
type AckReason = (Option<String>, Option<i64>);

/// One connection: TraceConnection's state and rows.
struct Conn {
    key: PyObject, // its key in the reader's conns / dirty dicts
    vantage_client: bool,
    vantage_server: bool,
    time_to_ms: f64,
    rtt_to_ms: f64,
    ack_delay: u8,
    received_time_from_datagram: bool,
    header_length_is_packet_size: bool,
    missing_ack_delay_is_zero: bool,
    python_owned: bool, // the reader keeps this connection's state itself (a value the lane cannot hold)
    origin_t: Option<f64>,
    first_t: Option<f64>,
    first_packet_t: Option<f64>,
    events: i64,
    pending_events: i64,
    local_max_ack_delay_ms: Option<f64>,
    peer_max_ack_delay_ms: Option<f64>,
    local_ack_delay_exponent: Option<i64>,
    peer_ack_delay_exponent: Option<i64>,
    peer_params_seen: bool,
    local_params_seen: bool,
    handshake_confirmed_t: Option<f64>,
    last_datagram_rx_t: Option<f64>,
    ack_reasons: HashMap<AckKey, AckReason>,
    rows: Rows,
}

struct TraceState {
    index: i64,
    group_id: Option<String>,
    group_is_connection: bool,
    delta: bool,
    last_t: f64,
    conn: Option<usize>,
}

// ---------------------------------------------------------------------------------------------------------
// What an event asks for, checked in full before anything changes.

enum AckDelay {
    Missing,   // absent or null
    Number(f64),
    Other,     // a bool, list or object: no delay
}

struct FramePlan {
    index: i64,
    frame_type: u8,
    frame_bytes: Option<i64>,
    length: Option<i64>,
    stream_id: Option<i64>,
    offset: Option<i64>,
    fin: Option<bool>,
    // ACK frames
    ack_delay_ms: Option<f64>,
    largest_acked: Option<i64>,
    first_ack_range: Option<i64>,
    ack_ranges: Option<String>,
}

struct PacketPlan {
    sent: bool,
    packet_type: u8,
    packet_number: Option<i64>,
    size: Option<i64>,
    frames: Option<Vec<FramePlan>>,
}

enum Plan {
    Nothing,
    Packet(PacketPlan),
    Metrics([Option<Num>; 4], [Option<i64>; 3]),
    Parameters { remote: Option<bool>, max_ack_delay: Option<f64>, exponent: Option<i64> },
    DatagramReceived,
    AckSent(AckKey, AckReason),
}

const KIND_OTHER: u8 = 0;
const KIND_PACKET_SENT: u8 = 1;
const KIND_PACKET_RECEIVED: u8 = 2;
const KIND_METRICS: u8 = 3;
const KIND_PARAMETERS: u8 = 4;
const KIND_DATAGRAM_RX: u8 = 5;
const KIND_ACK_SENT: u8 = 6;

// normalize.event_kind for an ASCII name
fn event_kind(name: &str) -> u8 {
    if name.eq_ignore_ascii_case("quicack:ack_sent") {
        return KIND_ACK_SENT;
    }
    let short = name.rsplit(':').next().unwrap_or(name);
    const KINDS: [(&str, u8); 10] = [
        ("packet_sent", KIND_PACKET_SENT),
        ("packet_received", KIND_PACKET_RECEIVED),
        ("metrics_updated", KIND_METRICS),
        ("recovery_metrics_updated", KIND_METRICS),
        ("metric_update", KIND_METRICS),
        ("congestion_metric_update", KIND_METRICS),
        ("parameters_set", KIND_PARAMETERS),
        ("datagrams_received", KIND_DATAGRAM_RX),
        ("datagram_received", KIND_DATAGRAM_RX),
        ("udp_datagrams_received", KIND_DATAGRAM_RX),
    ];
    KINDS.iter().find(|(k, _)| short.eq_ignore_ascii_case(k)).map_or(KIND_OTHER, |(_, kind)| *kind)
}

impl Conn {
    fn ack_delay_ms(&self, value: AckDelay, sent: bool) -> Checked<Option<f64>> {
        let v = match value {
            AckDelay::Missing => return Ok(if self.missing_ack_delay_is_zero { Some(0.0) } else { None }),
            AckDelay::Other => return Ok(None),
            AckDelay::Number(v) => v,
        };
        Ok(Some(match self.ack_delay {
            ACK_DELAY_US => v / 1000.0,
            ACK_DELAY_ENCODED | ACK_DELAY_ENCODED_MS => {
                let exponent = if sent { self.local_ack_delay_exponent } else { self.peer_ack_delay_exponent };
                let exponent = exponent.unwrap_or(3);
                if !(0..=62).contains(&exponent) {
                    return Err(HandOff); // Python raises or computes with a big int
                }
                let scaled = v * ((1u64 << exponent) as f64);
                if self.ack_delay == ACK_DELAY_ENCODED_MS { scaled } else { scaled / 1000.0 }
            }
            _ => v,
        }))
    }

    fn plan_packet(&self, sent: bool, data: Obj<'_>) -> Checked<PacketPlan> {
        let [d_header, d_packet_type, d_packet_number, d_raw, d_packet_size, d_frames] = data.fields(|k| match k {
            "header" => Some(0),
            "packet_type" => Some(1),
            "packet_number" => Some(2),
            "raw" => Some(3),
            "packet_size" => Some(4),
            "frames" => Some(5),
            _ => None,
        });
        let [h_packet_type, h_packet_number, h_packet_size, h_length] =
            match d_header.and_then(Value::as_object) {
                Some(header) => header.fields(|k| match k {
                    "packet_type" => Some(0),
                    "packet_number" => Some(1),
                    "packet_size" => Some(2),
                    "length" => Some(3),
                    _ => None,
                }),
                None => [None; 4],
            };
        let pt = match h_packet_type {
            Some(v) if v.truthy() => Some(v),
            _ => d_packet_type,
        };
        let packet_type = type_code(pt, packet_type_code, P_UNKNOWN)?;
        let pn = match h_packet_number {
            Some(v) => Some(v),
            None => d_packet_number,
        };
        let packet_number = py_int(pn)?;
        let mut size = match d_raw {
            Some(Value::Object(raw)) => raw.get("length"),
            _ => None,
        };
        if is_none(size) {
            size = match h_packet_size {
                Some(v) => Some(v),
                None => d_packet_size,
            };
            if is_none(size) && self.header_length_is_packet_size {
                size = h_length;
            }
        }
        let size = py_int(size)?;
        let frames = match d_frames {
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    if let Value::Object(fr) = item {
                        out.push(self.plan_frame(i as i64, fr, sent)?);
                    }
                }
                Some(out)
            }
            _ => None,
        };
        Ok(PacketPlan { sent, packet_type, packet_number, size, frames })
    }

    fn plan_frame(&self, index: i64, fr: Obj<'_>, sent: bool) -> Checked<FramePlan> {
        let [f_frame_type, f_raw, f_length, f_len, f_stream_id, f_id, f_offset, f_fin, f_acked_ranges, f_ack_delay,
            f_payload_length] = fr.fields(|k| match k {
            "frame_type" => Some(0),
            "raw" => Some(1),
            "length" => Some(2),
            "len" => Some(3),
            "stream_id" => Some(4),
            "id" => Some(5),
            "offset" => Some(6),
            "fin" => Some(7),
            "acked_ranges" => Some(8),
            "ack_delay" => Some(9),
            "payload_length" => Some(10),
            _ => None,
        });
        let frame_type = type_code(f_frame_type, frame_type_code, F_UNKNOWN)?;
        let fraw = f_raw.and_then(Value::as_object);
        let mut frame_bytes = match fraw {
            Some(raw) => raw_int(raw.get("length"))?,
            None => None,
        };
        let mut plan = FramePlan {
            index,
            frame_type,
            frame_bytes: None,
            length: None,
            stream_id: None,
            offset: None,
            fin: None,
            ack_delay_ms: None,
            largest_acked: None,
            first_ack_range: None,
            ack_ranges: None,
        };
        match frame_type {
            F_STREAM | F_CRYPTO | F_DATAGRAM => {
                let mut length = f_length;
                if is_none(length) {
                    length = f_len;
                    if is_none(length) {
                        if let Some(raw) = fraw {
                            length = raw.get("payload_length");
                        }
                    }
                }
                plan.length = py_int(length)?;
                if frame_type == F_STREAM {
                    let sid = match f_stream_id {
                        Some(v) => Some(v),
                        None => f_id,
                    };
                    plan.stream_id = py_int(sid)?;
                    plan.offset = py_int(f_offset)?;
                    plan.fin = Some(f_fin.is_some_and(Value::truthy));
                } else if frame_type == F_CRYPTO {
                    plan.offset = py_int(f_offset)?;
                }
            }
            F_ACK => {
                if let Some(Value::Array(ranges)) = f_acked_ranges {
                    let mut out: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
                    for r in ranges.iter() {
                        let (lo, hi) = match r {
                            Value::Array(pair) if !pair.is_empty() => {
                                let mut items = pair.iter();
                                let lo = py_int(items.next())?;
                                let hi = if pair.len() > 1 { py_int(items.next())? } else { lo };
                                (lo, hi)
                            }
                            other => {
                                let v = py_int(Some(other))?;
                                (v, v)
                            }
                        };
                        if let (Some(lo), Some(hi)) = (lo, hi) {
                            out.push(if lo > hi { (hi, lo) } else { (lo, hi) });
                        }
                    }
                    // Python's stable sort, highest first
                    out.sort_by_key(|range| std::cmp::Reverse(range.1));
                    if let Some(&(lo, hi)) = out.first() {
                        plan.largest_acked = Some(hi);
                        plan.first_ack_range = Some(hi.checked_sub(lo).ok_or(HandOff)?);
                        let mut text = String::with_capacity(out.len() * 16);
                        text.push('[');
                        for (n, (lo, hi)) in out.iter().enumerate() {
                            if n > 0 {
                                text.push(',');
                            }
                            let _ = write!(text, "[{lo},{hi}]");
                        }
                        text.push(']');
                        plan.ack_ranges = Some(text);
                    }
                }
                let delay = match f_ack_delay {
                    None | Some(Value::Null) => AckDelay::Missing,
                    Some(Value::Int(i)) => AckDelay::Number(i as f64),
                    Some(Value::Float(f)) => AckDelay::Number(f),
                    Some(Value::Str(_)) => return Err(HandOff),
                    Some(_) => AckDelay::Other,
                };
                plan.ack_delay_ms = self.ack_delay_ms(delay, sent)?;
            }
            F_PADDING => {
                if frame_bytes.is_none() {
                    frame_bytes = match f_length {
                        Some(v) => raw_int(Some(v))?,
                        None => raw_int(f_payload_length)?,
                    };
                }
            }
            F_HANDSHAKE_DONE => {}
            _ => {
                if let Some(v) = f_stream_id {
                    plan.stream_id = py_int(Some(v))?;
                }
            }
        }
        plan.frame_bytes = frame_bytes;
        Ok(plan)
    }

    fn plan_metrics(&self, data: Obj<'_>) -> Checked<Plan> {
        let [srtt, variance, latest, min, congestion_window, cwnd, current_cwnd, pto, bif] = data.fields(|k| match k {
            "smoothed_rtt" => Some(0),
            "rtt_variance" => Some(1),
            "latest_rtt" => Some(2),
            "min_rtt" => Some(3),
            "congestion_window" => Some(4),
            "cwnd" => Some(5),
            "current_cwnd" => Some(6),
            "pto_count" => Some(7),
            "bytes_in_flight" => Some(8),
            _ => None,
        });
        let rtt_values = [srtt, variance, latest, min];
        let mut cwnd_value = congestion_window;
        if is_none(cwnd_value) {
            cwnd_value = match cwnd {
                Some(v) => Some(v),
                None => current_cwnd,
            };
        }
        let cwnd = cwnd_value;
        if rtt_values.iter().all(|v| is_none(*v)) && is_none(cwnd) && is_none(pto) && is_none(bif) {
            return Ok(Plan::Nothing);
        }
        let scale = self.rtt_to_ms;
        let mut rtts = [None; 4];
        if scale == 1.0 {
            for (out, v) in rtts.iter_mut().zip(rtt_values) {
                *out = raw_num(v)?;
            }
            Ok(Plan::Metrics(rtts, [raw_int(pto)?, raw_int(cwnd)?, raw_int(bif)?]))
        } else {
            for (out, v) in rtts.iter_mut().zip(rtt_values) {
                *out = py_num(v)?.map(|v| Num::F(v * scale));
            }
            Ok(Plan::Metrics(rtts, [py_int(pto)?, py_int(cwnd)?, py_int(bif)?]))
        }
    }

    fn plan(&self, kind: u8, data: Obj<'_>) -> Checked<Plan> {
        Ok(match kind {
            KIND_PACKET_SENT => Plan::Packet(self.plan_packet(true, data)?),
            KIND_PACKET_RECEIVED => Plan::Packet(self.plan_packet(false, data)?),
            KIND_METRICS => self.plan_metrics(data)?,
            KIND_PARAMETERS => {
                let owner = match data.get("owner") {
                    Some(v) => Some(v),
                    None => data.get("initiator"),
                };
                let max_ack_delay = py_num(data.get("max_ack_delay"))?;
                let exponent = py_int(data.get("ack_delay_exponent"))?;
                let remote = match owner {
                    Some(Value::Str("remote")) => Some(true),
                    Some(Value::Str("local")) => Some(false),
                    _ => None,
                };
                Plan::Parameters { remote, max_ack_delay, exponent }
            }
            KIND_DATAGRAM_RX => Plan::DatagramReceived,
            KIND_ACK_SENT => {
                let space = match data.get("packet_number_space") {
                    Some(Value::Str(s)) => match s {
                        "initial" => Some(0),
                        "handshake" => Some(1),
                        "application_data" => Some(2),
                        _ => None,
                    },
                    Some(Value::Array(_)) | Some(Value::Object(_)) => return Err(HandOff), // unhashable in Python
                    _ => None,
                };
                let reason = match data.get("reason") {
                    Some(Value::Str(s)) => Some(s.to_string()),
                    _ => None,
                };
                let pn = py_int(data.get("packet_number"))?;
                let acked = py_int(data.get("acked_packets"))?;
                Plan::AckSent((space, pn), (reason, acked))
            }
            _ => Plan::Nothing,
        })
    }

    fn apply(&mut self, t: f64, plan: Plan) {
        match plan {
            Plan::Nothing => {}
            Plan::DatagramReceived => self.last_datagram_rx_t = Some(t),
            Plan::AckSent(key, value) => {
                self.ack_reasons.insert(key, value);
            }
            Plan::Parameters { remote, max_ack_delay, exponent } => match remote {
                Some(true) => {
                    self.peer_params_seen = true;
                    if max_ack_delay.is_some() {
                        self.peer_max_ack_delay_ms = max_ack_delay;
                    }
                    if exponent.is_some() {
                        self.peer_ack_delay_exponent = exponent;
                    }
                }
                Some(false) => {
                    self.local_params_seen = true;
                    if max_ack_delay.is_some() {
                        self.local_max_ack_delay_ms = max_ack_delay;
                    }
                    if exponent.is_some() {
                        self.local_ack_delay_exponent = exponent;
                    }
                }
                None => {}
            },
            Plan::Metrics(rtts, ints) => {
                let m = &mut self.rows.metrics;
                m.t.push(t);
                for (column, v) in m.rtts.iter_mut().zip(rtts) {
                    column.push(v);
                }
                m.pto_count.push(ints[0]);
                m.cwnd_bytes.push(ints[1]);
                m.bytes_in_flight.push(ints[2]);
            }
            Plan::Packet(p) => self.apply_packet(t, p),
        }
    }

    fn apply_packet(&mut self, mut t: f64, p: PacketPlan) {
        let event = if p.sent { 0 } else { 1 };
        if !p.sent && self.received_time_from_datagram {
            if let Some(rx) = self.last_datagram_rx_t {
                if rx <= t {
                    t = rx;
                }
            }
        }
        if self.first_packet_t.is_none() {
            self.first_packet_t = Some(t);
        }
        if self.origin_t.is_none()
            && p.packet_type == P_INITIAL
            && ((p.sent && self.vantage_client) || (!p.sent && self.vantage_server))
        {
            self.origin_t = Some(t);
        }
        let space = pn_space_of(p.packet_type);
        let aead = if p.packet_type <= 3 { Some(16) } else { None };
        let pn = p.packet_number;
        let (eliciting, logged) = match p.frames {
            None => (None, false),
            Some(frames) => {
                let mut eliciting = false;
                for fr in frames {
                    let mut reason: AckReason = (None, None);
                    match fr.frame_type {
                        F_STREAM | F_CRYPTO | F_DATAGRAM => eliciting = true,
                        F_ACK => {
                            if p.sent && !self.ack_reasons.is_empty() {
                                if let Some(found) = self.ack_reasons.remove(&(space, pn)) {
                                    reason = found;
                                }
                            }
                        }
                        F_PADDING | F_CONNECTION_CLOSE => {}
                        other => {
                            eliciting = true;
                            if other == F_HANDSHAKE_DONE
                                && self.handshake_confirmed_t.is_none()
                                && p.sent == self.vantage_server
                            {
                                self.handshake_confirmed_t = Some(t);
                            }
                        }
                    }
                    let f = &mut self.rows.frames;
                    f.event.push(event);
                    f.t.push(t);
                    f.pn_space.push(space);
                    f.packet_number.push(pn);
                    f.frame_index.push(fr.index);
                    f.frame_type.push(fr.frame_type);
                    f.frame_bytes.push(fr.frame_bytes);
                    f.ack_delay_ms.push(fr.ack_delay_ms);
                    f.largest_acked.push(fr.largest_acked);
                    f.first_ack_range.push(fr.first_ack_range);
                    f.ack_ranges.push(fr.ack_ranges);
                    f.stream_id.push(fr.stream_id);
                    f.offset.push(fr.offset);
                    f.length.push(fr.length);
                    f.fin.push(fr.fin);
                    f.ack_reason.push(reason.0);
                    f.ack_eliciting_since_previous_ack.push(reason.1);
                }
                (Some(eliciting), true)
            }
        };
        let r = &mut self.rows.packets;
        r.event.push(event);
        r.t.push(t);
        r.packet_type.push(p.packet_type);
        r.pn_space.push(space);
        r.packet_number.push(pn);
        r.packet_bytes.push(p.size);
        r.aead_tag_bytes.push(aead);
        r.ack_eliciting.push(eliciting);
        r.frames_logged.push(logged);
    }
}

// ---------------------------------------------------------------------------------------------------------
// Record splitting (records._separated): records between separators, with their stream offsets; a record
// longer than max_record_bytes is dropped as it streams by and reported by its length.

enum Split {
    Need,
    End,
    Record { start: usize, end: usize, offset: u64, last: bool },
    TooLong { offset: u64, length: u64 },
}

struct Splitter {
    buf: Vec<u8>,
    start: usize,  // of the open record in buf
    scan: usize,   // buf is searched for the separator from here
    offset: u64,   // stream offset of the open record
    dropped: u64,  // bytes of the open record already dropped (it is too long)
    eof: bool,
    separator: u8,
    max_record: u64,
    next_offset: u64,
}

impl Splitter {
    fn feed(&mut self, chunk: &[u8]) {
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

    fn next(&mut self) -> Split {
        let separator = self.separator;
        match self.buf[self.scan..].iter().position(|&b| b == separator) {
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

/// bytes.isspace() of Python (and true for empty).
fn blank(part: &[u8]) -> bool {
    part.iter().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
}

// What `step` stops for.
const STOP_NEED: i64 = 0;
const STOP_END: i64 = 1;
const STOP_RECORD: i64 = 2;
const STOP_TOO_LONG: i64 = 3;
const STOP_FLUSH: i64 = 4;


/// The compiled lane of one JSON-SEQ / NDJSON qlog file (see the module comment).
#[pyclass(module = "quicack_core", name = "QlogLane")]
pub struct QlogLane {
    split: Splitter,
    tape: Tape, // reused from record to record
    lines: bool,
    max_depth: usize,
    batch_events: i64,
    number: i64,
    // the reader's counters (_FileReader.pending, events_since_batch, events_before_batch, bad_times, ...)
    pending: i64,
    events_since_batch: i64,
    events_before_batch: i64,
    bad_times: i64,
    first_bad_time: Option<(i64, f64)>,
    dirty: Py<PyDict>,
    trace: Option<TraceState>,
    conns: Vec<Conn>,
    by_group: HashMap<i64, HashMap<String, usize>>,
}

impl QlogLane {
    fn conn(&self, cid: usize) -> PyResult<&Conn> {
        self.conns.get(cid).ok_or_else(|| PyIndexError::new_err("no such connection"))
    }

    fn conn_mut(&mut self, cid: usize) -> PyResult<&mut Conn> {
        self.conns.get_mut(cid).ok_or_else(|| PyIndexError::new_err("no such connection"))
    }

    /// `_FileReader._event` for one parsed event record; HandOff leaves everything as it was.
    fn event(&mut self, py: Python<'_>, ev: Obj<'_>) -> Checked<()> {
        let trace = self.trace.as_ref().ok_or(HandOff)?;
        let [name, time, group_id, data] = ev.fields(|k| match k {
            "name" => Some(0),
            "time" => Some(1),
            "group_id" => Some(2),
            "data" => Some(3),
            _ => None,
        });
        let name = match name {
            Some(Value::Str(s)) if s.is_ascii() => s,
            _ => return Err(HandOff),
        };
        let t = match time {
            Some(Value::Int(i)) => i as f64,
            Some(Value::Float(f)) => f,
            _ => return Err(HandOff),
        };
        let cid = match group_id {
            None | Some(Value::Null) => trace.conn,
            Some(Value::Str(g)) => {
                if !trace.group_is_connection || trace.group_id.as_deref() == Some(g) {
                    trace.conn
                } else {
                    self.by_group.get(&trace.index).and_then(|m| m.get(g)).copied()
                }
            }
            Some(_) => return Err(HandOff),
        }
        .ok_or(HandOff)?;
        let conn = &self.conns[cid];
        if conn.python_owned || conn.first_t.is_none() {
            return Err(HandOff);
        }
        let plan = match data {
            Some(Value::Object(data)) => match event_kind(name) {
                KIND_OTHER => Plan::Nothing,
                kind => conn.plan(kind, data)?,
            },
            _ => Plan::Nothing,
        };
        // From here on the event is the lane's.
        self.pending += 1;
        self.events_since_batch += 1;
        let conn = &mut self.conns[cid];
        if conn.pending_events == 0 {
            // first event since the connection's last flush (a dict keeps the first position of a key)
            if self.dirty.bind(py).set_item(conn.key.bind(py), py.None()).is_err() {
                return Err(HandOff); // cannot happen for a tuple key; the reader would fail the same way
            }
        }
        let mut t = t * conn.time_to_ms;
        let trace = self.trace.as_mut().expect("checked above");
        if trace.delta {
            t += trace.last_t;
        }
        if !(-MAX_TIME_MS < t && t < MAX_TIME_MS) {
            self.bad_times += 1;
            if self.first_bad_time.is_none() {
                self.first_bad_time = Some((self.events_before_batch + self.events_since_batch, t));
            }
            return Ok(());
        }
        if trace.delta {
            trace.last_t = t;
        }
        conn.events += 1;
        conn.pending_events += 1;
        conn.apply(t, plan);
        Ok(())
    }

    fn python_rows<'py>(&mut self, py: Python<'py>, cid: usize, table: usize) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty_bound(py);
        let conn = self.conn_mut(cid)?;
        let name = |codes: &[&'static str], code: u8| codes[code as usize];
        match table {
            0 => {
                let r = std::mem::take(&mut conn.rows.packets);
                for i in 0..r.t.len() {
                    out.append(name(&EVENTS, r.event[i]))?;
                    out.append(r.t[i])?;
                    out.append(name(&PACKET_TYPES, r.packet_type[i]))?;
                    out.append(r.pn_space[i].map(|c| name(&PN_SPACES, c)))?;
                    out.append(r.packet_number[i])?;
                    out.append(r.packet_bytes[i])?;
                    out.append(r.aead_tag_bytes[i])?;
                    out.append(r.ack_eliciting[i])?;
                    out.append(r.frames_logged[i])?;
                }
            }
            1 => {
                let r = std::mem::take(&mut conn.rows.frames);
                for i in 0..r.t.len() {
                    out.append(name(&EVENTS, r.event[i]))?;
                    out.append(r.t[i])?;
                    out.append(r.pn_space[i].map(|c| name(&PN_SPACES, c)))?;
                    out.append(r.packet_number[i])?;
                    out.append(r.frame_index[i])?;
                    out.append(name(&FRAME_TYPES, r.frame_type[i]))?;
                    out.append(r.frame_bytes[i])?;
                    out.append(r.ack_delay_ms[i])?;
                    out.append(r.largest_acked[i])?;
                    out.append(r.first_ack_range[i])?;
                    out.append(r.ack_ranges[i].as_deref())?;
                    out.append(r.stream_id[i])?;
                    out.append(r.offset[i])?;
                    out.append(r.length[i])?;
                    out.append(r.fin[i])?;
                    out.append(r.ack_reason[i].as_deref())?;
                    out.append(r.ack_eliciting_since_previous_ack[i])?;
                }
            }
            _ => {
                let r = std::mem::take(&mut conn.rows.metrics);
                for i in 0..r.t.len() {
                    out.append(r.t[i])?;
                    for column in &r.rtts {
                        match column[i] {
                            None => out.append(py.None())?,
                            Some(Num::I(v)) => out.append(v)?,
                            Some(Num::F(v)) => out.append(v)?,
                        }
                    }
                    out.append(r.pto_count[i])?;
                    out.append(r.cwnd_bytes[i])?;
                    out.append(r.bytes_in_flight[i])?;
                }
            }
        }
        Ok(out)
    }
}

fn float_field(value: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    if value.is_none() {
        Ok(None)
    } else if value.is_exact_instance_of::<PyFloat>() {
        Ok(Some(value.extract()?))
    } else {
        Err(PyTypeError::new_err("a float or None"))
    }
}

fn int_value(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    if value.is_exact_instance_of::<PyLong>() {
        value.extract() // OverflowError beyond int64
    } else {
        Err(PyTypeError::new_err("an int"))
    }
}

fn int_field(value: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    if value.is_none() {
        Ok(None)
    } else {
        int_value(value).map(Some)
    }
}

fn bool_field(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    if value.is_exact_instance_of::<PyBool>() {
        value.extract()
    } else {
        Err(PyTypeError::new_err("a bool"))
    }
}

fn space_code(space: &Bound<'_, PyAny>) -> PyResult<Option<Option<u8>>> {
    if space.is_none() {
        return Ok(Some(None));
    }
    let Ok(text) = space.extract::<&str>() else { return Ok(None) };
    Ok(PN_SPACES.iter().position(|s| *s == text).map(|c| Some(c as u8)))
}


// Python values of a row buffered by the Python handlers, taken only when each is of its column's own type
// (what polars' strict constructor takes as is); anything else leaves the rows in Python (Err).

fn code_in(names: &[&str], value: &Bound<'_, PyAny>) -> Result<u8, ()> {
    let text: &str = value.extract().map_err(|_| ())?;
    names.iter().position(|n| *n == text).map(|c| c as u8).ok_or(())
}

fn opt_code_in(names: &[&str], value: &Bound<'_, PyAny>) -> Result<Option<u8>, ()> {
    if value.is_none() { Ok(None) } else { code_in(names, value).map(Some) }
}

fn strict_float(value: &Bound<'_, PyAny>) -> Result<f64, ()> {
    if value.is_exact_instance_of::<PyFloat>() { value.extract().map_err(|_| ()) } else { Err(()) }
}

fn strict_opt_float(value: &Bound<'_, PyAny>) -> Result<Option<f64>, ()> {
    if value.is_none() { Ok(None) } else { strict_float(value).map(Some) }
}

fn strict_opt_int(value: &Bound<'_, PyAny>) -> Result<Option<i64>, ()> {
    if value.is_none() { Ok(None) } else { int_value(value).map(Some).map_err(|_| ()) }
}

fn strict_opt_bool(value: &Bound<'_, PyAny>) -> Result<Option<bool>, ()> {
    if value.is_none() { Ok(None) } else if value.is_exact_instance_of::<PyBool>() { value.extract().map(Some).map_err(|_| ()) } else { Err(()) }
}

fn strict_opt_text(value: &Bound<'_, PyAny>) -> Result<Option<String>, ()> {
    if value.is_none() { Ok(None) } else if value.is_exact_instance_of::<pyo3::types::PyString>() { value.extract().map(Some).map_err(|_| ()) } else { Err(()) }
}

fn strict_opt_num(value: &Bound<'_, PyAny>) -> Result<Option<Num>, ()> {
    if value.is_none() {
        Ok(None)
    } else if value.is_exact_instance_of::<PyFloat>() {
        value.extract().map(|f| Some(Num::F(f))).map_err(|_| ())
    } else {
        match int_value(value) {
            Ok(i) if i.abs() <= EXACT_FLOAT_INT => Ok(Some(Num::I(i))),
            _ => Err(()),
        }
    }
}

fn rows_from_python(table: usize, flat: &Bound<'_, PyList>) -> Result<Rows, ()> {
    let mut rows = Rows::default();
    let width = [9, 17, 8][table];
    if flat.len() % width != 0 {
        return Err(());
    }
    let values: Vec<Bound<'_, PyAny>> = flat.iter().collect();
    for row in values.chunks(width) {
        match table {
            0 => {
                let r = &mut rows.packets;
                r.event.push(code_in(&EVENTS, &row[0])?);
                r.t.push(strict_float(&row[1])?);
                r.packet_type.push(code_in(&PACKET_TYPES, &row[2])?);
                r.pn_space.push(opt_code_in(&PN_SPACES, &row[3])?);
                r.packet_number.push(strict_opt_int(&row[4])?);
                r.packet_bytes.push(strict_opt_int(&row[5])?);
                r.aead_tag_bytes.push(strict_opt_int(&row[6])?);
                r.ack_eliciting.push(strict_opt_bool(&row[7])?);
                r.frames_logged.push(strict_opt_bool(&row[8])?.ok_or(())?);
            }
            1 => {
                let f = &mut rows.frames;
                f.event.push(code_in(&EVENTS, &row[0])?);
                f.t.push(strict_float(&row[1])?);
                f.pn_space.push(opt_code_in(&PN_SPACES, &row[2])?);
                f.packet_number.push(strict_opt_int(&row[3])?);
                f.frame_index.push(strict_opt_int(&row[4])?.ok_or(())?);
                f.frame_type.push(code_in(&FRAME_TYPES, &row[5])?);
                f.frame_bytes.push(strict_opt_int(&row[6])?);
                f.ack_delay_ms.push(strict_opt_float(&row[7])?);
                f.largest_acked.push(strict_opt_int(&row[8])?);
                f.first_ack_range.push(strict_opt_int(&row[9])?);
                f.ack_ranges.push(strict_opt_text(&row[10])?);
                f.stream_id.push(strict_opt_int(&row[11])?);
                f.offset.push(strict_opt_int(&row[12])?);
                f.length.push(strict_opt_int(&row[13])?);
                f.fin.push(strict_opt_bool(&row[14])?);
                f.ack_reason.push(strict_opt_text(&row[15])?);
                f.ack_eliciting_since_previous_ack.push(strict_opt_int(&row[16])?);
            }
            _ => {
                let m = &mut rows.metrics;
                m.t.push(strict_float(&row[0])?);
                for (column, value) in m.rtts.iter_mut().zip(&row[1..5]) {
                    column.push(strict_opt_num(value)?);
                }
                m.pto_count.push(strict_opt_int(&row[5])?);
                m.cwnd_bytes.push(strict_opt_int(&row[6])?);
                m.bytes_in_flight.push(strict_opt_int(&row[7])?);
            }
        }
    }
    Ok(rows)
}

/// `front` then `back`, column by column.
fn prepend<T>(back: &mut Vec<T>, mut front: Vec<T>) {
    front.append(back);
    *back = front;
}

#[pymethods]
impl QlogLane {
    #[new]
    fn new(dirty: Py<PyDict>, max_record_bytes: u64, max_nesting_depth: usize, batch_events: i64) -> Self {
        QlogLane {
            split: Splitter {
                buf: Vec::new(),
                start: 0,
                scan: 0,
                offset: 0,
                dropped: 0,
                eof: false,
                separator: 0x1e,
                max_record: max_record_bytes,
                next_offset: 0,
            },
            tape: Tape::default(),
            lines: false,
            max_depth: max_nesting_depth,
            batch_events: batch_events.max(1),
            number: 0,
            pending: 0,
            events_since_batch: 0,
            events_before_batch: 0,
            bad_times: 0,
            first_bad_time: None,
            dirty,
            trace: None,
            conns: Vec::new(),
            by_group: HashMap::new(),
        }
    }

    /// Records are separated by newlines (NDJSON, an RS before a line is dropped) or by RS (JSON-SEQ).
    fn start(&mut self, lines: bool) {
        self.lines = lines;
        self.split.separator = if lines { b'\n' } else { 0x1e };
    }

    /// The next bytes of the stream; empty at its end.
    fn feed(&mut self, chunk: &[u8]) {
        self.split.feed(chunk);
    }

    /// Reads records until one needs the reader: (STOP_NEED,) more bytes, (STOP_END,), (STOP_RECORD, offset,
    /// number, bytes, last) a record for the Python reader, (STOP_TOO_LONG, offset, number, length), or
    /// (STOP_FLUSH,) a batch is full.
    fn step(&mut self, py: Python<'_>) -> PyResult<PyObject> {
        loop {
            let (start, end, offset, last) = match self.split.next() {
                Split::Need => return Ok((STOP_NEED,).into_py(py)),
                Split::End => return Ok((STOP_END,).into_py(py)),
                Split::TooLong { offset, length } => {
                    self.number += 1;
                    return Ok((STOP_TOO_LONG, offset, self.number, length).into_py(py));
                }
                Split::Record { start, end, offset, last } => (start, end, offset, last),
            };
            let part = &self.split.buf[start..end];
            let part = if self.lines && part.first() == Some(&0x1e) { &part[1..] } else { part };
            if blank(part) {
                continue;
            }
            self.number += 1;
            // The record lives in the splitter's buffer, lent out while the event changes the state.
            let buf = std::mem::take(&mut self.split.buf);
            let part = &buf[start..end];
            let part = if self.lines && part.first() == Some(&0x1e) { &part[1..] } else { part };
            let mut tape = std::mem::take(&mut self.tape);
            let handled = match tape.parse(part, self.max_depth) {
                Ok(doc) => match doc.root() {
                    Value::Object(event) => self.event(py, event).is_ok(),
                    _ => false,
                },
                Err(_) => false,
            };
            self.tape = tape;
            self.split.buf = buf;
            if !handled {
                let part = &self.split.buf[start..end];
                let part = if self.lines && part.first() == Some(&0x1e) { &part[1..] } else { part };
                return Ok((STOP_RECORD, offset, self.number, PyBytes::new_bound(py, part), last).into_py(py));
            }
            if self.pending >= self.batch_events {
                return Ok((STOP_FLUSH,).into_py(py));
            }
        }
    }

    #[getter]
    fn next_offset(&self) -> u64 {
        self.split.next_offset
    }

    #[getter]
    fn number(&self) -> i64 {
        self.number
    }

    /// The reader's current trace (None: no header yet, the lane hands every record back).
    #[pyo3(signature = (index=None, group_id=None, group_is_connection=true, delta=false, last_t=0.0, conn=None))]
    fn set_trace(
        &mut self,
        index: Option<i64>,
        group_id: Option<String>,
        group_is_connection: bool,
        delta: bool,
        last_t: f64,
        conn: Option<usize>,
    ) {
        self.trace = index.map(|index| TraceState { index, group_id, group_is_connection, delta, last_t, conn });
    }

    /// The current trace's last event time (its time_format "delta" adds to it).
    #[getter]
    fn last_t(&self) -> f64 {
        self.trace.as_ref().map_or(0.0, |t| t.last_t)
    }

    /// A new connection of the reader; its number.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (key, trace_index, group, vantage, time_to_ms, rtt_to_ms, ack_delay, received_time_from_datagram,
                        header_length_is_packet_size, missing_ack_delay_is_zero))]
    fn register(
        &mut self,
        key: PyObject,
        trace_index: i64,
        group: Option<String>,
        vantage: Option<&str>,
        time_to_ms: f64,
        rtt_to_ms: f64,
        ack_delay: &str,
        received_time_from_datagram: bool,
        header_length_is_packet_size: bool,
        missing_ack_delay_is_zero: bool,
    ) -> PyResult<usize> {
        let ack_delay = match ack_delay {
            "ms" => ACK_DELAY_MS,
            "us" => ACK_DELAY_US,
            "encoded" => ACK_DELAY_ENCODED,
            "encoded_ms" => ACK_DELAY_ENCODED_MS,
            other => return Err(PyValueError::new_err(format!("unknown ack_delay unit {other:?}"))),
        };
        let cid = self.conns.len();
        self.conns.push(Conn {
            key,
            vantage_client: vantage == Some("client"),
            vantage_server: vantage == Some("server"),
            time_to_ms,
            rtt_to_ms,
            ack_delay,
            received_time_from_datagram,
            header_length_is_packet_size,
            missing_ack_delay_is_zero,
            python_owned: false,
            origin_t: None,
            first_t: None,
            first_packet_t: None,
            events: 0,
            pending_events: 0,
            local_max_ack_delay_ms: None,
            peer_max_ack_delay_ms: None,
            local_ack_delay_exponent: None,
            peer_ack_delay_exponent: None,
            peer_params_seen: false,
            local_params_seen: false,
            handshake_confirmed_t: None,
            last_datagram_rx_t: None,
            ack_reasons: HashMap::new(),
            rows: Rows::default(),
        });
        if let Some(group) = group {
            self.by_group.entry(trace_index).or_default().insert(group, cid);
        }
        Ok(cid)
    }

    /// From now on the reader keeps this connection (the lane hands all its events back).
    fn release(&mut self, cid: usize) -> PyResult<()> {
        self.conn_mut(cid)?.python_owned = true;
        Ok(())
    }

    /// Field `field` of connection `cid` (0 origin_t, 1 first_t, 2 first_packet_t, 3 events, 4 pending_events,
    /// 5 local_max_ack_delay_ms, 6 peer_max_ack_delay_ms, 7 local_ack_delay_exponent, 8 peer_ack_delay_exponent,
    /// 9 peer_params_seen, 10 local_params_seen, 11 handshake_confirmed_t, 12 last_datagram_rx_t).
    fn get(&self, py: Python<'_>, cid: usize, field: usize) -> PyResult<PyObject> {
        let c = self.conn(cid)?;
        Ok(match field {
            0 => c.origin_t.into_py(py),
            1 => c.first_t.into_py(py),
            2 => c.first_packet_t.into_py(py),
            3 => c.events.into_py(py),
            4 => c.pending_events.into_py(py),
            5 => c.local_max_ack_delay_ms.into_py(py),
            6 => c.peer_max_ack_delay_ms.into_py(py),
            7 => c.local_ack_delay_exponent.into_py(py),
            8 => c.peer_ack_delay_exponent.into_py(py),
            9 => c.peer_params_seen.into_py(py),
            10 => c.local_params_seen.into_py(py),
            11 => c.handshake_confirmed_t.into_py(py),
            12 => c.last_datagram_rx_t.into_py(py),
            _ => return Err(PyIndexError::new_err("no such field")),
        })
    }

    /// Sets a field (see `get`); TypeError / OverflowError when the value is not of the field's type.
    fn set(&mut self, cid: usize, field: usize, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let c = self.conn_mut(cid)?;
        match field {
            0 => c.origin_t = float_field(value)?,
            1 => c.first_t = float_field(value)?,
            2 => c.first_packet_t = float_field(value)?,
            3 => c.events = int_value(value)?,
            4 => c.pending_events = int_value(value)?,
            5 => c.local_max_ack_delay_ms = float_field(value)?,
            6 => c.peer_max_ack_delay_ms = float_field(value)?,
            7 => c.local_ack_delay_exponent = int_field(value)?,
            8 => c.peer_ack_delay_exponent = int_field(value)?,
            9 => c.peer_params_seen = bool_field(value)?,
            10 => c.local_params_seen = bool_field(value)?,
            11 => c.handshake_confirmed_t = float_field(value)?,
            12 => c.last_datagram_rx_t = float_field(value)?,
            _ => return Err(PyIndexError::new_err("no such field")),
        }
        Ok(())
    }

    /// The reader's counters: 0 pending, 1 events_since_batch, 2 events_before_batch, 3 bad_times,
    /// 4 first_bad_time ((event number, time) or None).
    fn get_counter(&self, py: Python<'_>, field: usize) -> PyResult<PyObject> {
        Ok(match field {
            0 => self.pending.into_py(py),
            1 => self.events_since_batch.into_py(py),
            2 => self.events_before_batch.into_py(py),
            3 => self.bad_times.into_py(py),
            4 => self.first_bad_time.into_py(py),
            _ => return Err(PyIndexError::new_err("no such counter")),
        })
    }

    fn set_counter(&mut self, field: usize, value: &Bound<'_, PyAny>) -> PyResult<()> {
        match field {
            0 => self.pending = int_value(value)?,
            1 => self.events_since_batch = int_value(value)?,
            2 => self.events_before_batch = int_value(value)?,
            3 => self.bad_times = int_value(value)?,
            4 => {
                self.first_bad_time = if value.is_none() {
                    None
                } else {
                    let pair = value.downcast::<PyTuple>()?;
                    Some((int_value(&pair.get_item(0)?)?, pair.get_item(1)?.extract()?))
                }
            }
            _ => return Err(PyIndexError::new_err("no such counter")),
        }
        Ok(())
    }

    /// Whether the lane holds rows of connection `cid`.
    fn has_rows(&self, cid: usize) -> PyResult<bool> {
        let rows = &self.conn(cid)?.rows;
        Ok((0..3).any(|table| rows.count(table) > 0))
    }

    /// The rows of one table (0 packets, 1 frames, 2 metrics) of connection `cid` as the flat Python list
    /// TraceConnection buffers (row after row), taken out of the lane.
    fn take_python<'py>(&mut self, py: Python<'py>, cid: usize, table: usize) -> PyResult<Bound<'py, PyList>> {
        self.python_rows(py, cid, table)
    }

    /// Puts rows the Python handlers buffered for connection `cid` (a flat list of one table, row after row)
    /// before the lane's rows of that table, if every value is of its column's own type; False leaves them.
    fn absorb(&mut self, cid: usize, table: usize, flat: &Bound<'_, PyList>) -> PyResult<bool> {
        let Ok(front) = rows_from_python(table, flat) else { return Ok(false) };
        let rows = &mut self.conn_mut(cid)?.rows;
        match table {
            0 => {
                let (r, f) = (&mut rows.packets, front.packets);
                prepend(&mut r.event, f.event);
                prepend(&mut r.t, f.t);
                prepend(&mut r.packet_type, f.packet_type);
                prepend(&mut r.pn_space, f.pn_space);
                prepend(&mut r.packet_number, f.packet_number);
                prepend(&mut r.packet_bytes, f.packet_bytes);
                prepend(&mut r.aead_tag_bytes, f.aead_tag_bytes);
                prepend(&mut r.ack_eliciting, f.ack_eliciting);
                prepend(&mut r.frames_logged, f.frames_logged);
            }
            1 => {
                let (r, f) = (&mut rows.frames, front.frames);
                prepend(&mut r.event, f.event);
                prepend(&mut r.t, f.t);
                prepend(&mut r.pn_space, f.pn_space);
                prepend(&mut r.packet_number, f.packet_number);
                prepend(&mut r.frame_index, f.frame_index);
                prepend(&mut r.frame_type, f.frame_type);
                prepend(&mut r.frame_bytes, f.frame_bytes);
                prepend(&mut r.ack_delay_ms, f.ack_delay_ms);
                prepend(&mut r.largest_acked, f.largest_acked);
                prepend(&mut r.first_ack_range, f.first_ack_range);
                prepend(&mut r.ack_ranges, f.ack_ranges);
                prepend(&mut r.stream_id, f.stream_id);
                prepend(&mut r.offset, f.offset);
                prepend(&mut r.length, f.length);
                prepend(&mut r.fin, f.fin);
                prepend(&mut r.ack_reason, f.ack_reason);
                prepend(&mut r.ack_eliciting_since_previous_ack, f.ack_eliciting_since_previous_ack);
            }
            _ => {
                let (r, f) = (&mut rows.metrics, front.metrics);
                prepend(&mut r.t, f.t);
                for (column, front) in r.rtts.iter_mut().zip(f.rtts) {
                    prepend(column, front);
                }
                prepend(&mut r.pto_count, f.pto_count);
                prepend(&mut r.cwnd_bytes, f.cwnd_bytes);
                prepend(&mut r.bytes_in_flight, f.bytes_in_flight);
            }
        }
        Ok(true)
    }

    /// The rows of one table of connections `cids`, in that order, as an Arrow table (columns of
    /// PACKET_COLUMNS / FRAME_COLUMNS / METRIC_COLUMNS), and the number of rows of each; taken out of the lane.
    fn take_arrow(&mut self, py: Python<'_>, table: usize, cids: Vec<usize>) -> PyResult<(PyObject, Vec<usize>)> {
        let mut lengths = Vec::with_capacity(cids.len());
        for &cid in &cids {
            lengths.push(self.conn(cid)?.rows.count(table));
        }
        let total: usize = lengths.iter().sum();
        let name = |s: &str| s.to_string();
        let columns: Vec<(String, Column)> = match table {
            0 => {
                let mut c = PacketRows::default();
                for &cid in &cids {
                    let r = std::mem::take(&mut self.conns[cid].rows.packets);
                    c.event.extend(r.event);
                    c.t.extend(r.t);
                    c.packet_type.extend(r.packet_type);
                    c.pn_space.extend(r.pn_space);
                    c.packet_number.extend(r.packet_number);
                    c.packet_bytes.extend(r.packet_bytes);
                    c.aead_tag_bytes.extend(r.aead_tag_bytes);
                    c.ack_eliciting.extend(r.ack_eliciting);
                    c.frames_logged.extend(r.frames_logged);
                }
                vec![
                    (name("event"), Column::Names(&EVENTS, c.event.into_iter().map(Some).collect())),
                    (name("t"), Column::Float(c.t.into_iter().map(Some).collect())),
                    (name("packet_type"), Column::Names(&PACKET_TYPES, c.packet_type.into_iter().map(Some).collect())),
                    (name("pn_space"), Column::Names(&PN_SPACES, c.pn_space)),
                    (name("packet_number"), Column::Int(c.packet_number)),
                    (name("packet_bytes"), Column::Int(c.packet_bytes)),
                    (name("aead_tag_bytes"), Column::Int(c.aead_tag_bytes)),
                    (name("ack_eliciting"), Column::Bool(c.ack_eliciting)),
                    (name("frames_logged"), Column::Bool(c.frames_logged.into_iter().map(Some).collect())),
                ]
            }
            1 => {
                let mut c = FrameRows::default();
                for &cid in &cids {
                    let r = std::mem::take(&mut self.conns[cid].rows.frames);
                    c.event.extend(r.event);
                    c.t.extend(r.t);
                    c.pn_space.extend(r.pn_space);
                    c.packet_number.extend(r.packet_number);
                    c.frame_index.extend(r.frame_index);
                    c.frame_type.extend(r.frame_type);
                    c.frame_bytes.extend(r.frame_bytes);
                    c.ack_delay_ms.extend(r.ack_delay_ms);
                    c.largest_acked.extend(r.largest_acked);
                    c.first_ack_range.extend(r.first_ack_range);
                    c.ack_ranges.extend(r.ack_ranges);
                    c.stream_id.extend(r.stream_id);
                    c.offset.extend(r.offset);
                    c.length.extend(r.length);
                    c.fin.extend(r.fin);
                    c.ack_reason.extend(r.ack_reason);
                    c.ack_eliciting_since_previous_ack.extend(r.ack_eliciting_since_previous_ack);
                }
                vec![
                    (name("event"), Column::Names(&EVENTS, c.event.into_iter().map(Some).collect())),
                    (name("t"), Column::Float(c.t.into_iter().map(Some).collect())),
                    (name("pn_space"), Column::Names(&PN_SPACES, c.pn_space)),
                    (name("packet_number"), Column::Int(c.packet_number)),
                    (name("frame_index"), Column::Int(c.frame_index.into_iter().map(Some).collect())),
                    (name("frame_type"), Column::Names(&FRAME_TYPES, c.frame_type.into_iter().map(Some).collect())),
                    (name("frame_bytes"), Column::Int(c.frame_bytes)),
                    (name("ack_delay_ms"), Column::Float(c.ack_delay_ms)),
                    (name("largest_acked"), Column::Int(c.largest_acked)),
                    (name("first_ack_range"), Column::Int(c.first_ack_range)),
                    (name("ack_ranges"), Column::Text(c.ack_ranges)),
                    (name("stream_id"), Column::Int(c.stream_id)),
                    (name("offset"), Column::Int(c.offset)),
                    (name("length"), Column::Int(c.length)),
                    (name("fin"), Column::Bool(c.fin)),
                    (name("ack_reason"), Column::Text(c.ack_reason)),
                    (name("ack_eliciting_since_previous_ack"), Column::Int(c.ack_eliciting_since_previous_ack)),
                ]
            }
            _ => {
                let mut c = MetricRows::default();
                for &cid in &cids {
                    let r = std::mem::take(&mut self.conns[cid].rows.metrics);
                    c.t.extend(r.t);
                    for (out, column) in c.rtts.iter_mut().zip(r.rtts) {
                        out.extend(column);
                    }
                    c.pto_count.extend(r.pto_count);
                    c.cwnd_bytes.extend(r.cwnd_bytes);
                    c.bytes_in_flight.extend(r.bytes_in_flight);
                }
                let [srtt, var, latest, min] = c.rtts;
                let floats = |v: Vec<Option<Num>>| Column::Float(v.into_iter().map(|n| n.map(Num::float)).collect());
                vec![
                    (name("t"), Column::Float(c.t.into_iter().map(Some).collect())),
                    (name("smoothed_rtt_ms"), floats(srtt)),
                    (name("rtt_variance_ms"), floats(var)),
                    (name("latest_rtt_ms"), floats(latest)),
                    (name("min_rtt_ms"), floats(min)),
                    (name("pto_count"), Column::Int(c.pto_count)),
                    (name("cwnd_bytes"), Column::Int(c.cwnd_bytes)),
                    (name("bytes_in_flight"), Column::Int(c.bytes_in_flight)),
                ]
            }
        };
        Ok((ArrowTable::new(columns, total).into_py(py), lengths))
    }

    // quicack:ack_sent reasons of connection `cid` (TraceConnection.ack_reasons), for the Python handlers.

    fn ack_reasons_len(&self, cid: usize) -> PyResult<usize> {
        Ok(self.conn(cid)?.ack_reasons.len())
    }

    fn ack_reason_pop(
        &mut self,
        py: Python<'_>,
        cid: usize,
        space: &Bound<'_, PyAny>,
        packet_number: &Bound<'_, PyAny>,
        default: PyObject,
    ) -> PyResult<PyObject> {
        let Some(space) = space_code(space)? else { return Ok(default) };
        let pn = if packet_number.is_none() {
            None
        } else {
            match int_value(packet_number) {
                Ok(v) => Some(v),
                Err(_) => return Ok(default), // the lane holds no such key
            }
        };
        Ok(match self.conn_mut(cid)?.ack_reasons.remove(&(space, pn)) {
            Some(value) => value.into_py(py),
            None => default,
        })
    }

    /// TypeError / OverflowError when the key or value is not one the lane can hold.
    fn ack_reason_set(
        &mut self,
        cid: usize,
        space: &Bound<'_, PyAny>,
        packet_number: &Bound<'_, PyAny>,
        reason: &Bound<'_, PyAny>,
        acked: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let space = space_code(space)?.ok_or_else(|| PyTypeError::new_err("a packet number space"))?;
        let pn = int_field(packet_number)?;
        let reason: Option<String> = if reason.is_none() { None } else { Some(reason.extract()?) };
        let acked = int_field(acked)?;
        self.conn_mut(cid)?.ack_reasons.insert((space, pn), (reason, acked));
        Ok(())
    }

    /// All reasons of connection `cid` as TraceConnection's dict, taken out of the lane.
    fn take_ack_reasons<'py>(&mut self, py: Python<'py>, cid: usize) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new_bound(py);
        for ((space, pn), value) in std::mem::take(&mut self.conn_mut(cid)?.ack_reasons) {
            let key = (space.map(|c| PN_SPACES[c as usize]), pn);
            out.set_item(key, value)?;
        }
        Ok(out)
    }

}
