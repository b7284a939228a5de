//! The common events of one connection (`normalize.TraceConnection`'s handlers): each event is first read
//! into a plan, checked in full (a `HandOff` changes nothing), then applied to the connection's state and rows.

use std::collections::HashMap;

use pyo3::prelude::*;

use super::columns::{AckRanges, Rows};
use super::values::*;
use crate::json::{Obj, Value};

pub const ACK_DELAY_MS: u8 = 0;
pub const ACK_DELAY_US: u8 = 1;
pub const ACK_DELAY_ENCODED: u8 = 2;
pub const ACK_DELAY_ENCODED_MS: u8 = 3; // neqo: the wire field / 1000, not scaled by the exponent

pub type AckKey = (Option<u8>, Option<i64>);
pub type AckReason = (Option<String>, Option<i64>);

// The rows each connection buffers, one list per table (`normalize.PACKET_COLUMNS`, `FRAME_COLUMNS`,
// `METRIC_COLUMNS`: the same columns in the same order, the flat rows the Python handlers buffer); names and types
// from the contract (`row_columns!`).
row_columns!(
    /// Packet rows; `event`, `packet_type` and `pn_space` as codes of EVENTS, PACKET_TYPES, PN_SPACES.
    pub struct PacketRows, row PacketRow, table packets {
        event: u8 [EVENTS],
        #[reader] t: f64,
        packet_type: u8 [PACKET_TYPES],
        pn_space: Option<u8> [PN_SPACES],
        packet_number: Option<i64>,
        packet_bytes: Option<i64>,
        aead_tag_bytes: Option<i64>,
        ack_eliciting: Option<bool>,
        frames_logged: bool,
    }
);

row_columns!(
    /// Frame rows; `frame_type` as a code of FRAME_NAMES.
    pub struct FrameRows, row FrameRow, table frames {
        event: u8 [EVENTS],
        #[reader] t: f64,
        pn_space: Option<u8> [PN_SPACES],
        packet_number: Option<i64>,
        frame_index: i64,
        frame_type: u8 [FRAME_NAMES],
        frame_bytes: Option<i64>,
        ack_delay_ms: Option<f64>,
        largest_acked: Option<i64>,
        first_ack_range: Option<i64>,
        ack_ranges: Option<AckRanges>,
        stream_id: Option<i64>,
        offset: Option<i64>,
        length: Option<i64>,
        fin: Option<bool>,
        ack_reason: Option<String>,
        ack_eliciting_since_previous_ack: Option<i64>,
    }
);

row_columns!(
    /// Metric rows; the RTTs as the log wrote them (`Num`), in ms.
    pub struct MetricRows, row MetricRow, table metrics_logged {
        #[reader] t: f64,
        smoothed_rtt_ms: Option<Num>,
        rtt_variance_ms: Option<Num>,
        latest_rtt_ms: Option<Num>,
        min_rtt_ms: Option<Num>,
        pto_count: Option<i64>,
        cwnd_bytes: Option<i64>,
        bytes_in_flight: Option<i64>,
    }
);

/// One connection: TraceConnection's state and rows.
pub struct Conn {
    pub key: PyObject, // its key in the reader's conns / dirty dicts
    pub vantage_client: bool,
    pub vantage_server: bool,
    pub time_to_ms: f64,
    pub rtt_to_ms: f64,
    pub ack_delay: u8,
    pub received_time_from_datagram: bool,
    pub header_length_is_packet_size: bool,
    pub missing_ack_delay_is_zero: bool,
    pub python_owned: bool, // the reader keeps this connection's state itself (a value the lane cannot hold)
    pub origin_t: Option<f64>,
    pub first_t: Option<f64>,
    pub first_packet_t: Option<f64>,
    pub events: i64,
    pub pending_events: i64,
    pub local_max_ack_delay_ms: Option<f64>,
    pub peer_max_ack_delay_ms: Option<f64>,
    pub local_ack_delay_exponent: Option<i64>,
    pub peer_ack_delay_exponent: Option<i64>,
    pub peer_params_seen: bool,
    pub local_params_seen: bool,
    pub handshake_confirmed_t: Option<f64>,
    pub last_datagram_rx_t: Option<f64>,
    pub ack_reasons: HashMap<AckKey, AckReason>,
    pub rows: Rows,
}

impl Conn {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        key: PyObject,
        vantage: Option<&str>,
        time_to_ms: f64,
        rtt_to_ms: f64,
        ack_delay: u8,
        received_time_from_datagram: bool,
        header_length_is_packet_size: bool,
        missing_ack_delay_is_zero: bool,
    ) -> Self {
        Conn {
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
        }
    }
}

pub struct TraceState {
    pub index: i64,
    pub group_id: Option<String>,
    pub group_is_connection: bool,
    pub delta: bool,
    pub last_t: f64,
    pub conn: Option<usize>,
}

// ---------------------------------------------------------------------------------------------------------
// What an event asks for, checked in full before anything changes.

pub enum AckDelay {
    Missing,   // absent or null
    Number(f64),
    Other,     // a bool, list or object: no delay
}

/// A frame's row as planned: its own columns; the packet's (event, t, pn_space, packet_number) and the ACK reason
/// are set when the packet is applied.
pub type FramePlan = FrameRow;

pub struct PacketPlan {
    pub sent: bool,
    pub packet_type: u8,
    pub packet_number: Option<i64>,
    pub size: Option<i64>,
    pub frames: Option<Vec<FramePlan>>,
}

pub enum Plan {
    Nothing,
    Packet(PacketPlan),
    Metrics([Option<Num>; 4], [Option<i64>; 3]),
    Parameters { remote: Option<bool>, max_ack_delay: Option<f64>, exponent: Option<i64> },
    DatagramReceived,
    AckSent(AckKey, AckReason),
}

pub const KIND_OTHER: u8 = 0;
pub const KIND_PACKET_SENT: u8 = 1;
pub const KIND_PACKET_RECEIVED: u8 = 2;
pub const KIND_METRICS: u8 = 3;
pub const KIND_PARAMETERS: u8 = 4;
pub const KIND_DATAGRAM_RX: u8 = 5;
pub const KIND_ACK_SENT: u8 = 6;

// normalize.event_kind for an ASCII name
pub fn event_kind(name: &str) -> u8 {
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
    pub fn ack_delay_ms(&self, value: AckDelay, sent: bool) -> Checked<Option<f64>> {
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

    pub fn plan_packet(&self, sent: bool, data: Obj<'_>) -> Checked<PacketPlan> {
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
        if packet_type == P_UNKNOWN {
            // no type the lane knows (another field name, e.g. pcap2qlog's data.type): the Python reader decides
            return Err(HandOff);
        }
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

    pub fn plan_frame(&self, index: i64, fr: Obj<'_>, sent: bool) -> Checked<FramePlan> {
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
        if frame_type == F_UNKNOWN {
            // a name the lane does not know (an extension frame, qlog's "unknown" with its type number): the Python
            // reader keeps the name as written (normalize.unknown_frame_type, frames.raw_frame_type)
            return Err(HandOff);
        }
        let fraw = f_raw.and_then(Value::as_object);
        let mut frame_bytes = match fraw {
            Some(raw) => raw_int(raw.get("length"))?,
            None => None,
        };
        let mut plan = FramePlan { frame_index: index, frame_type, ..FramePlan::default() };
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
                        plan.ack_ranges = Some(AckRanges(out));
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

    pub fn plan_metrics(&self, data: Obj<'_>) -> Checked<Plan> {
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

    pub fn plan(&self, kind: u8, data: Obj<'_>) -> Checked<Plan> {
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

    pub fn apply(&mut self, t: f64, plan: Plan) {
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
                let [smoothed_rtt_ms, rtt_variance_ms, latest_rtt_ms, min_rtt_ms] = rtts;
                let [pto_count, cwnd_bytes, bytes_in_flight] = ints;
                self.rows.metrics.push(MetricRow {
                    t,
                    smoothed_rtt_ms,
                    rtt_variance_ms,
                    latest_rtt_ms,
                    min_rtt_ms,
                    pto_count,
                    cwnd_bytes,
                    bytes_in_flight,
                });
            }
            Plan::Packet(p) => self.apply_packet(t, p),
        }
    }

    pub fn apply_packet(&mut self, mut t: f64, p: PacketPlan) {
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
                for mut fr in frames {
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
                    (fr.event, fr.t, fr.pn_space, fr.packet_number) = (event, t, space, pn);
                    (fr.ack_reason, fr.ack_eliciting_since_previous_ack) = reason;
                    self.rows.frames.push(fr);
                }
                (Some(eliciting), true)
            }
        };
        self.rows.packets.push(PacketRow {
            event,
            t,
            packet_type: p.packet_type,
            pn_space: space,
            packet_number: pn,
            packet_bytes: p.size,
            aead_tag_bytes: aead,
            ack_eliciting: eliciting,
            frames_logged: logged,
        });
    }
}

#[cfg(test)]
#[path = "../tests/qlog_events.rs"]
mod tests;
