//! The row buffers of one batch (datagrams, packets, frames) and the frame walker that fills them: the same
//! interface and the same rows as `quicack.pcap.columns.RowBuffers` with `quicack.pcap.frames.walk_frames`.

use pyo3::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;

use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::arrow::{ArrowTable, Column};
use crate::keys::PacketKeys;
use crate::PacketNumbers;

pub const PACKET_TYPES: [&str; 8] =
    ["initial", "0rtt", "handshake", "retry", "1rtt", "version_negotiation", "unknown", "datagram_padding"];
pub const PN_SPACES: [&str; 3] = ["initial", "handshake", "appdata"];
pub const DIRECTIONS: [&str; 2] = ["c2s", "s2c"];
pub const PACKET_1RTT: u8 = 4;
pub const SPACE_APPDATA: u8 = 2;

// Frame names by code; `frame_name` maps a frame type to its code (as frames.FRAME_NAMES).
const FRAME_NAMES: [&str; 25] = [
    "padding",
    "ping",
    "ack",
    "reset_stream",
    "stop_sending",
    "crypto",
    "new_token",
    "stream",
    "max_data",
    "max_stream_data",
    "max_streams",
    "data_blocked",
    "stream_data_blocked",
    "streams_blocked",
    "new_connection_id",
    "retire_connection_id",
    "path_challenge",
    "path_response",
    "connection_close",
    "handshake_done",
    "immediate_ack",
    "datagram",
    "ack_frequency",
    "unknown",
    "",
];
const F_PADDING: u8 = 0;
const F_ACK: u8 = 2;
const F_CRYPTO: u8 = 5;
const F_STREAM: u8 = 7;
const F_DATAGRAM: u8 = 21;
const F_ACK_FREQUENCY: u8 = 22;
const F_UNKNOWN: u8 = 23;

fn frame_name(frame_type: u64) -> Option<u8> {
    Some(match frame_type {
        0x00 => 0,
        0x01 => 1,
        0x02 | 0x03 => 2,
        0x04 => 3,
        0x05 => 4,
        0x06 => 5,
        0x07 => 6,
        0x08..=0x0F => 7,
        0x10 => 8,
        0x11 => 9,
        0x12 | 0x13 => 10,
        0x14 => 11,
        0x15 => 12,
        0x16 | 0x17 => 13,
        0x18 => 14,
        0x19 => 15,
        0x1A => 16,
        0x1B => 17,
        0x1C | 0x1D => 18,
        0x1E => 19,
        0x1F | 0xAC => 20,
        0x30 | 0x31 => 21,
        0xAF => 22,
        _ => return None,
    })
}

/// Cut every listed column to `length` rows.
macro_rules! truncate_columns {
    ($length:expr; $($column:expr),+ $(,)?) => {
        $($column.truncate($length);)+
    };
}

pub fn code_of(names: &[&str], name: &str) -> PyResult<u8> {
    names
        .iter()
        .position(|candidate| *candidate == name)
        .map(|index| index as u8)
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("unknown name {name:?}")))
}

/// A cursor over a payload that fails (like aioquic's Buffer) when a read runs past the end.
struct Cursor<'a> {
    data: &'a [u8],
    position: usize,
}

impl<'a> Cursor<'a> {
    fn varint(&mut self) -> Option<u64> {
        let first = *self.data.get(self.position)?;
        let length = 1usize << (first >> 6);
        if self.position + length > self.data.len() {
            return None;
        }
        let mut value = u64::from(first & 0x3F);
        for index in 1..length {
            value = (value << 8) | u64::from(self.data[self.position + index]);
        }
        self.position += length;
        Some(value)
    }

    fn bytes(&mut self, length: u64) -> Option<&'a [u8]> {
        let end = self.position.checked_add(usize::try_from(length).ok()?)?;
        if end > self.data.len() {
            return None;
        }
        let slice = &self.data[self.position..end];
        self.position = end;
        Some(slice)
    }
}

pub struct Walk {
    pub count: i64,
    pub ack_eliciting: bool,
    pub crypto: Vec<(usize, u64, Vec<u8>)>,
    pub new_cids: Vec<Vec<u8>>,
    pub unknown: Option<String>,
    pub has_ack: bool,
}

#[derive(Default)]
pub struct FrameRows {
    frame_index: Vec<i64>,
    frame_type: Vec<u8>,
    frame_bytes: Vec<i64>,
    ack_delay_raw: Vec<Option<u64>>,
    largest_acked: Vec<Option<u64>>,
    first_ack_range: Vec<Option<u64>>,
    // ACK ranges as (low, high) pairs: row i has ack_range_pairs[ack_range_ends[i-1]..ack_range_ends[i]], null
    // unless ack_range_valid[i] (wide integers: a corrupt ACK's ranges can run below zero and past i64)
    ack_range_ends: Vec<usize>,
    ack_range_valid: Vec<bool>,
    ack_range_pairs: Vec<(i128, i128)>,
    stream_id: Vec<Option<u64>>,
    offset: Vec<Option<u64>>,
    length: Vec<Option<u64>>,
    fin: Vec<Option<bool>>,
    tls_messages: Vec<Option<Py<PyAny>>>,
    ecn: Vec<(usize, [u64; 3])>,
    ack_frequency: Vec<(usize, [u64; 4])>,
}

#[derive(Default, Clone, Copy)]
struct FrameValues {
    ack_delay_raw: Option<u64>,
    largest_acked: Option<u64>,
    first_ack_range: Option<u64>,
    stream_id: Option<u64>,
    offset: Option<u64>,
    length: Option<u64>,
    fin: Option<bool>,
}

impl FrameRows {
    fn len(&self) -> usize {
        self.frame_index.len()
    }

    /// One frame row; `has_ranges`: an ACK, whose ranges were pushed onto ack_range_pairs just before.
    fn add(&mut self, index: i64, name: u8, size: usize, values: FrameValues, has_ranges: bool) {
        self.frame_index.push(index);
        self.frame_type.push(name);
        self.frame_bytes.push(size as i64);
        self.ack_delay_raw.push(values.ack_delay_raw);
        self.largest_acked.push(values.largest_acked);
        self.first_ack_range.push(values.first_ack_range);
        self.ack_range_ends.push(if has_ranges { self.ack_range_pairs.len() } else { self.ranges_end() });
        self.ack_range_valid.push(has_ranges);
        self.stream_id.push(values.stream_id);
        self.offset.push(values.offset);
        self.length.push(values.length);
        self.fin.push(values.fin);
        self.tls_messages.push(None);
    }

    /// The ACK ranges as the contract's list of {low, high} structs, or, when a corrupt ACK's values do not fit
    /// 64 bits, as the JSON text `[[low, high], ...]` the pure-Python engine writes (the decoder parses it).
    fn ack_ranges_column(&self, as_lists: bool) -> Column {
        let pairs = &self.ack_range_pairs[..self.ranges_end()];
        let fits = |value: i128| i64::try_from(value).is_ok();
        if as_lists && pairs.iter().all(|(low, high)| fits(*low) && fits(*high)) {
            return Column::Ranges(
                self.ack_range_ends.iter().map(|end| *end as i32).collect(),
                self.ack_range_valid.clone(),
                pairs.iter().map(|(low, high)| (*low as i64, *high as i64)).collect(),
            );
        }
        let mut start = 0;
        let mut texts = Vec::with_capacity(self.len());
        for (end, valid) in self.ack_range_ends.iter().zip(&self.ack_range_valid) {
            texts.push(valid.then(|| {
                let items: Vec<String> = pairs[start..*end].iter().map(|(low, high)| format!("[{low},{high}]")).collect();
                format!("[{}]", items.join(","))
            }));
            start = *end;
        }
        Column::Text(texts)
    }

    /// Where the ranges of the last row end (those pushed after it belong to no row yet).
    fn ranges_end(&self) -> usize {
        self.ack_range_ends.last().copied().unwrap_or(0)
    }

    fn truncate(&mut self, length: usize) {
        truncate_columns!(length; self.frame_index, self.frame_type, self.frame_bytes, self.ack_delay_raw,
            self.largest_acked, self.first_ack_range, self.ack_range_ends, self.ack_range_valid, self.stream_id, self.offset, self.length,
            self.fin, self.tls_messages);
        self.ack_range_pairs.truncate(self.ranges_end());
        self.ecn.retain(|(row, _)| *row < length);
        self.ack_frequency.retain(|(row, _)| *row < length);
    }

    /// One frame; Err(()) when it runs past the end, Ok(false) for an unknown type.
    fn walk_one(
        &mut self,
        cursor: &mut Cursor,
        index: i64,
        position: usize,
        walk: &mut Walk,
    ) -> Result<bool, ()> {
        let payload = cursor.data;
        let end = payload.len();
        let frame_type = cursor.varint().ok_or(())?;
        let mut values = FrameValues::default();
        match frame_type {
            0x00 => {
                let stop = payload[position..].iter().position(|byte| *byte != 0).map_or(end, |at| position + at);
                // A PADDING type in a longer varint encoding would not move: count its bytes (Python would loop).
                let stop = stop.max(cursor.position);
                self.add(index, F_PADDING, stop - position, values, false);
                cursor.position = stop;
                return Ok(true);
            }
            0x08..=0x0F => {
                let stream_id = cursor.varint().ok_or(())?;
                let offset = if frame_type & 0x04 != 0 { cursor.varint().ok_or(())? } else { 0 };
                let (data_end, length) = if frame_type & 0x02 != 0 {
                    let length = cursor.varint().ok_or(())?;
                    let data_end = (cursor.position as u128) + u128::from(length);
                    if data_end > end as u128 {
                        return Err(());
                    }
                    (data_end as usize, length)
                } else {
                    (end, (end - cursor.position) as u64)
                };
                cursor.position = data_end;
                values.stream_id = Some(stream_id);
                values.offset = Some(offset);
                values.length = Some(length);
                values.fin = Some(frame_type & 0x01 != 0);
                self.add(index, F_STREAM, data_end - position, values, false);
                walk.ack_eliciting = true;
            }
            0x02 | 0x03 => {
                let largest = cursor.varint().ok_or(())?;
                let delay = cursor.varint().ok_or(())?;
                let range_count = cursor.varint().ok_or(())?;
                let first_range = cursor.varint().ok_or(())?;
                let mut high = i128::from(largest);
                let mut low = high - i128::from(first_range);
                let ranges_start = self.ranges_end(); // drops the ranges of an ACK that ran past the end
                self.ack_range_pairs.truncate(ranges_start);
                self.ack_range_pairs.push((low, high));
                for _ in 0..range_count {
                    let gap = cursor.varint().ok_or(())?;
                    let range_length = cursor.varint().ok_or(())?;
                    high = low - i128::from(gap) - 2;
                    low = high - i128::from(range_length);
                    self.ack_range_pairs.push((low, high));
                }
                if frame_type == 0x03 {
                    let counts = [cursor.varint().ok_or(())?, cursor.varint().ok_or(())?, cursor.varint().ok_or(())?];
                    self.ecn.push((self.len(), counts));
                }
                values.ack_delay_raw = Some(delay);
                values.largest_acked = Some(largest);
                values.first_ack_range = Some(first_range);
                self.add(index, F_ACK, cursor.position - position, values, true);
                walk.has_ack = true;
            }
            0x06 => {
                let offset = cursor.varint().ok_or(())?;
                let length = cursor.varint().ok_or(())?;
                let data = cursor.bytes(length).ok_or(())?;
                walk.crypto.push((self.len(), offset, data.to_vec()));
                values.offset = Some(offset);
                values.length = Some(length);
                self.add(index, F_CRYPTO, cursor.position - position, values, false);
                walk.ack_eliciting = true;
            }
            0x01 | 0x1E | 0x1F | 0xAC => {
                self.add(index, frame_name(frame_type).expect("known"), cursor.position - position, values, false);
                walk.ack_eliciting = true;
            }
            0xAF => {
                let fields = [
                    cursor.varint().ok_or(())?,
                    cursor.varint().ok_or(())?,
                    cursor.varint().ok_or(())?,
                    cursor.varint().ok_or(())?,
                ];
                self.ack_frequency.push((self.len(), fields));
                self.add(index, F_ACK_FREQUENCY, cursor.position - position, values, false);
                walk.ack_eliciting = true;
            }
            0x30 | 0x31 => {
                let length = if frame_type == 0x31 {
                    let length = cursor.varint().ok_or(())?;
                    if (cursor.position as u128) + u128::from(length) > end as u128 {
                        return Err(());
                    }
                    length
                } else {
                    (end - cursor.position) as u64
                };
                cursor.position += length as usize;
                values.length = Some(length);
                self.add(index, F_DATAGRAM, cursor.position - position, values, false);
                walk.ack_eliciting = true;
            }
            _ => {
                let Some(name) = frame_name(frame_type) else {
                    return Ok(false);
                };
                let mut stream_id = None;
                match frame_type {
                    0x04 => {
                        stream_id = Some(cursor.varint().ok_or(())?);
                        cursor.varint().ok_or(())?;
                        cursor.varint().ok_or(())?;
                    }
                    0x05 | 0x11 | 0x15 => {
                        stream_id = Some(cursor.varint().ok_or(())?);
                        cursor.varint().ok_or(())?;
                    }
                    0x07 => {
                        let length = cursor.varint().ok_or(())?;
                        cursor.bytes(length).ok_or(())?;
                    }
                    0x10 | 0x12 | 0x13 | 0x14 | 0x16 | 0x17 | 0x19 => {
                        cursor.varint().ok_or(())?;
                    }
                    0x18 => {
                        cursor.varint().ok_or(())?;
                        cursor.varint().ok_or(())?;
                        let cid_length = cursor.bytes(1).ok_or(())?[0];
                        walk.new_cids.push(cursor.bytes(u64::from(cid_length)).ok_or(())?.to_vec());
                        cursor.bytes(16).ok_or(())?;
                    }
                    0x1A | 0x1B => {
                        cursor.bytes(8).ok_or(())?;
                    }
                    0x1C => {
                        cursor.varint().ok_or(())?;
                        cursor.varint().ok_or(())?;
                        let length = cursor.varint().ok_or(())?;
                        cursor.bytes(length).ok_or(())?;
                    }
                    _ => {
                        // 0x1D: CONNECTION_CLOSE (application): error, reason
                        cursor.varint().ok_or(())?;
                        let length = cursor.varint().ok_or(())?;
                        cursor.bytes(length).ok_or(())?;
                    }
                }
                values.stream_id = stream_id;
                self.add(index, name, cursor.position - position, values, false);
                if !matches!(frame_type, 0x00 | 0x02 | 0x03 | 0x1C | 0x1D) {
                    walk.ack_eliciting = true;
                }
            }
        }
        Ok(true)
    }

    /// One row per frame of `payload` (as frames.walk_frames); never fails.
    pub fn walk(&mut self, payload: &[u8]) -> Walk {
        let mut walk = Walk {
            count: 0,
            ack_eliciting: false,
            crypto: Vec::new(),
            new_cids: Vec::new(),
            unknown: None,
            has_ack: false,
        };
        let mut cursor = Cursor { data: payload, position: 0 };
        let end = payload.len();
        let mut index: i64 = 0;
        let mut position = 0;
        while position < end {
            match self.walk_one(&mut cursor, index, position, &mut walk) {
                Ok(true) => {}
                Ok(false) => {
                    walk.unknown = Some(format!("unknown frame type 0x{:x}", frame_type_at(payload, position)));
                    self.add(index, F_UNKNOWN, end - position, FrameValues::default(), false);
                    index += 1;
                    break;
                }
                Err(()) => {
                    walk.unknown = Some("frame runs past the end of the packet (malformed)".to_string());
                    self.add(index, F_UNKNOWN, end - position, FrameValues::default(), false);
                    index += 1;
                    break;
                }
            }
            index += 1;
            position = cursor.position;
        }
        walk.count = index;
        walk
    }
}

fn frame_type_at(payload: &[u8], position: usize) -> u64 {
    let mut cursor = Cursor { data: payload, position };
    cursor.varint().unwrap_or(0)
}

#[derive(Default)]
pub struct DatagramRows {
    odcid: Vec<Arc<str>>,
    direction: Vec<u8>,
    datagram_index: Vec<i64>,
    time_ms: Vec<f64>,
    time_abs_ns: Vec<i64>,
    ip_header_bytes: Vec<i64>,
    udp_payload_bytes: Vec<i64>,
    quic_packets: Vec<i64>,
}

#[derive(Default)]
pub struct PacketRows {
    datagram_row: Vec<i64>,
    packet_type: Vec<u8>,
    pn_space: Vec<Option<u8>>,
    packet_number: Vec<Option<i64>>,
    packet_bytes: Vec<i64>,
    header_bytes: Vec<Option<i64>>,
    aead_tag_bytes: Vec<Option<i64>>,
    ack_eliciting: Vec<Option<bool>>,
    decrypted: Vec<Option<bool>>,
    frames_complete: Vec<Option<bool>>,
    frame_count: Vec<i64>,
    sender: Vec<Option<Py<PyAny>>>,
}

/// All rows of one batch.
#[pyclass(module = "quicack_core", name = "RowBuffers")]
#[derive(Default)]
pub struct RowBuffers {
    pub datagrams: DatagramRows,
    pub packets: PacketRows,
    pub frames: FrameRows,
}

pub struct PacketRow {
    pub datagram_row: i64,
    pub packet_type: u8,
    pub packet_bytes: i64,
    pub pn_space: Option<u8>,
    pub packet_number: Option<i64>,
    pub header_bytes: Option<i64>,
    pub aead_tag_bytes: Option<i64>,
    pub ack_eliciting: Option<bool>,
    pub decrypted: Option<bool>,
    pub frames_complete: Option<bool>,
    pub frame_count: i64,
    pub sender: Option<Py<PyAny>>,
}

impl RowBuffers {
    pub fn datagrams_len(&self) -> usize {
        self.datagrams.odcid.len()
    }

    #[allow(clippy::too_many_arguments)]
    pub fn push_datagram(
        &mut self,
        odcid: Arc<str>,
        direction: u8,
        datagram_index: i64,
        time_ms: f64,
        time_abs_ns: i64,
        ip_header_bytes: i64,
        udp_payload_bytes: i64,
        quic_packets: i64,
    ) {
        let rows = &mut self.datagrams;
        rows.odcid.push(odcid);
        rows.direction.push(direction);
        rows.datagram_index.push(datagram_index);
        rows.time_ms.push(time_ms);
        rows.time_abs_ns.push(time_abs_ns);
        rows.ip_header_bytes.push(ip_header_bytes);
        rows.udp_payload_bytes.push(udp_payload_bytes);
        rows.quic_packets.push(quic_packets);
    }

    pub fn push_packet(&mut self, row: PacketRow) {
        let rows = &mut self.packets;
        rows.datagram_row.push(row.datagram_row);
        rows.packet_type.push(row.packet_type);
        rows.pn_space.push(row.pn_space);
        rows.packet_number.push(row.packet_number);
        rows.packet_bytes.push(row.packet_bytes);
        rows.header_bytes.push(row.header_bytes);
        rows.aead_tag_bytes.push(row.aead_tag_bytes);
        rows.ack_eliciting.push(row.ack_eliciting);
        rows.decrypted.push(row.decrypted);
        // Version Negotiation and Retry are "decrypted" and have no frames to stop at; opaque packets: unknown.
        rows.frames_complete.push(if row.frames_complete.is_none() && row.decrypted == Some(true) {
            Some(true)
        } else {
            row.frames_complete
        });
        rows.frame_count.push(row.frame_count);
        rows.sender.push(row.sender);
    }

    pub fn walk_frames(&mut self, payload: &[u8]) -> Walk {
        self.frames.walk(payload)
    }

    pub fn walk_result(py: Python<'_>, walk: Walk) -> PyObject {
        let crypto: PyObject = if walk.crypto.is_empty() {
            py.None()
        } else {
            PyList::new_bound(
                py,
                walk.crypto.iter().map(|(row, offset, data)| {
                    PyTuple::new_bound(
                        py,
                        [row.into_py(py), offset.into_py(py), PyBytes::new_bound(py, data).into_any().unbind()],
                    )
                }),
            )
            .into_any()
            .unbind()
        };
        let new_cids: PyObject = if walk.new_cids.is_empty() {
            py.None()
        } else {
            PyList::new_bound(py, walk.new_cids.iter().map(|cid| PyBytes::new_bound(py, cid))).into_any().unbind()
        };
        (walk.count, walk.ack_eliciting, crypto, new_cids, walk.unknown, walk.has_ack).into_py(py)
    }
}

#[pymethods]
impl RowBuffers {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    fn lengths(&self) -> (usize, usize, usize) {
        (self.datagrams.odcid.len(), self.packets.datagram_row.len(), self.frames.len())
    }

    fn datagram_count(&self) -> usize {
        self.datagrams.odcid.len()
    }

    fn packet_count(&self) -> usize {
        self.packets.datagram_row.len()
    }

    fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// The packet type of the last packet row (None when there is none).
    fn last_packet_type(&self) -> Option<&'static str> {
        self.packets.packet_type.last().map(|code| PACKET_TYPES[*code as usize])
    }

    fn truncate(&mut self, lengths: (usize, usize, usize)) {
        let (datagrams, packets, frames) = lengths;
        let rows = &mut self.datagrams;
        truncate_columns!(datagrams; rows.odcid, rows.direction, rows.datagram_index, rows.time_ms, rows.time_abs_ns,
            rows.ip_header_bytes, rows.udp_payload_bytes, rows.quic_packets);
        let rows = &mut self.packets;
        truncate_columns!(packets; rows.datagram_row, rows.packet_type, rows.pn_space, rows.packet_number,
            rows.packet_bytes, rows.header_bytes, rows.aead_tag_bytes, rows.ack_eliciting, rows.decrypted,
            rows.frames_complete, rows.frame_count, rows.sender);
        self.frames.truncate(frames);
    }

    #[allow(clippy::too_many_arguments)]
    fn add_datagram(
        &mut self,
        connection_odcid: &str,
        direction: &str,
        datagram_index: i64,
        time_ms: f64,
        time_abs_ns: i64,
        ip_header_bytes: i64,
        udp_payload_bytes: i64,
        quic_packets: i64,
    ) -> PyResult<()> {
        let direction = code_of(&DIRECTIONS, direction)?;
        self.push_datagram(
            Arc::from(connection_odcid),
            direction,
            datagram_index,
            time_ms,
            time_abs_ns,
            ip_header_bytes,
            udp_payload_bytes,
            quic_packets,
        );
        Ok(())
    }

    #[pyo3(signature = (datagram_row, packet_type, packet_bytes, *, pn_space=None, packet_number=None,
        header_bytes=None, aead_tag_bytes=None, ack_eliciting=None, decrypted=Some(false), frames_complete=None,
        frame_count=0, sender=None))]
    #[allow(clippy::too_many_arguments)]
    fn add_packet(
        &mut self,
        datagram_row: i64,
        packet_type: &str,
        packet_bytes: i64,
        pn_space: Option<&str>,
        packet_number: Option<i64>,
        header_bytes: Option<i64>,
        aead_tag_bytes: Option<i64>,
        ack_eliciting: Option<bool>,
        decrypted: Option<bool>,
        frames_complete: Option<bool>,
        frame_count: i64,
        sender: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let packet_type = code_of(&PACKET_TYPES, packet_type)?;
        let pn_space = pn_space.map(|name| code_of(&PN_SPACES, name)).transpose()?;
        self.push_packet(PacketRow {
            datagram_row,
            packet_type,
            packet_bytes,
            pn_space,
            packet_number,
            header_bytes,
            aead_tag_bytes,
            ack_eliciting,
            decrypted,
            frames_complete,
            frame_count,
            sender,
        });
        Ok(())
    }

    /// Walk a decrypted payload's frames into the frame rows: (count, ack_eliciting, crypto, new_cids, unknown,
    /// has_ack), crypto as [(row, offset, data)] or None, new_cids a list or None.
    /// The Python decoder's path for a packet whose keys it has (decode._decrypt_and_walk) in one call: remove
    /// header protection and decrypt with `keys`, advance `numbers`, walk the frames and add the packet's row, as
    /// `PacketKeys.decrypt`, `PacketNumbers.update`, `walk` and `add_packet` would one after the other (without
    /// the payload and the packet as Python objects between them). ValueError when the packet does not decrypt
    /// (as `PacketKeys.decrypt`), with no row added. Returns (packet number, the walk as `walk` returns it).
    #[allow(clippy::too_many_arguments)]
    fn decrypt_and_add(
        &mut self,
        py: Python<'_>,
        keys: &Bound<'_, PacketKeys>,
        numbers: &Bound<'_, PacketNumbers>,
        direction: &str,
        packet_type: &str,
        pn_space: &str,
        data: &[u8],
        start: usize,
        pn_offset: usize,
        packet_end: usize,
        short: bool,
        datagram_row: i64,
        packet_bytes: i64,
        sender: Py<PyAny>,
    ) -> PyResult<(i64, PyObject)> {
        let (direction, space) = (code_of(&DIRECTIONS, direction)?, code_of(&PN_SPACES, pn_space)?);
        let packet_type = code_of(&PACKET_TYPES, packet_type)?;
        let expected = numbers.borrow().get(direction, space) + 1;
        let packet = keys
            .borrow_mut()
            .decrypt_packet(data, start, pn_offset, packet_end, expected, short)
            .map_err(|failure| pyo3::exceptions::PyValueError::new_err(failure.message()))?;
        if packet.packet_number >= expected {
            numbers.borrow_mut().set(direction, space, packet.packet_number);
        }
        let walk = self.walk_frames(&packet.payload);
        crate::keys::recycle(packet.payload);
        self.push_packet(PacketRow {
            datagram_row,
            packet_type,
            packet_bytes,
            pn_space: Some(space),
            packet_number: Some(packet.packet_number),
            header_bytes: Some(packet.header_bytes as i64),
            aead_tag_bytes: Some(16), // AEAD_TAG_BYTES: all of QUIC's AEADs
            ack_eliciting: Some(walk.ack_eliciting),
            decrypted: Some(true),
            frames_complete: Some(walk.unknown.is_none()),
            frame_count: walk.count,
            sender: Some(sender),
        });
        Ok((packet.packet_number, Self::walk_result(py, walk)))
    }

    fn walk(&mut self, py: Python<'_>, payload: &[u8]) -> PyObject {
        let walk = self.walk_frames(payload);
        Self::walk_result(py, walk)
    }

    #[pyo3(signature = (row, names=None))]
    fn set_tls_messages(&mut self, row: usize, names: Option<Py<PyAny>>) {
        self.frames.tls_messages[row] = names;
    }

    /// `columns` takes `ack_ranges_as_lists` (a decoder checks this before passing it).
    #[classattr]
    const ACK_RANGES_AS_LISTS: bool = true;

    /// The rows as three Arrow tables and the tls_messages list, as `columns.RowBuffers.columns`; the ACK ranges
    /// as JSON text like the twin's, or with `ack_ranges_as_lists` as the contract's lists of structs (mostly).
    #[pyo3(signature = (ack_ranges_as_lists=false))]
    fn columns<'py>(&self, py: Python<'py>, ack_ranges_as_lists: bool) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new_bound(py);
        let ints = |values: &[i64]| Column::Dense(values.to_vec());
        let unsigned = |values: &[Option<u64>]| Column::Unsigned(values.to_vec());
        let names = |table: &'static [&'static str], codes: &[u8]| Column::Codes(table, codes.to_vec());
        let rows = &self.datagrams;
        let count = rows.odcid.len();
        let datagrams = vec![
            ("connection_odcid".to_string(), Column::Shared(rows.odcid.clone())),
            ("direction".to_string(), names(&DIRECTIONS, &rows.direction)),
            ("datagram_index".to_string(), ints(&rows.datagram_index)),
            ("time_ms".to_string(), Column::Float(rows.time_ms.iter().map(|v| Some(*v)).collect())),
            ("time_abs_ns".to_string(), ints(&rows.time_abs_ns)),
            ("ip_header_bytes".to_string(), ints(&rows.ip_header_bytes)),
            ("udp_payload_bytes".to_string(), ints(&rows.udp_payload_bytes)),
            ("quic_packets".to_string(), ints(&rows.quic_packets)),
        ];
        out.set_item("datagrams", ArrowTable::new(datagrams, count).into_py(py))?;
        let rows = &self.packets;
        let count = rows.datagram_row.len();
        // The ACK delay exponent of each packet's sender, read once per sender and batch.
        let mut exponents: HashMap<usize, i64> = HashMap::new();
        let mut exponent = Vec::with_capacity(count);
        for sender in &rows.sender {
            exponent.push(match sender {
                None => 3,
                Some(sender) => match exponents.get(&(sender.as_ptr() as usize)) {
                    Some(value) => *value,
                    None => {
                        let value: i64 = sender.bind(py).getattr("ack_delay_exponent")?.extract()?;
                        exponents.insert(sender.as_ptr() as usize, value);
                        value
                    }
                },
            });
        }
        let packets = vec![
            ("datagram_row".to_string(), ints(&rows.datagram_row)),
            ("packet_type".to_string(), names(&PACKET_TYPES, &rows.packet_type)),
            ("pn_space".to_string(), Column::Names(&PN_SPACES, rows.pn_space.clone())),
            ("packet_number".to_string(), Column::Int(rows.packet_number.clone())),
            ("packet_bytes".to_string(), ints(&rows.packet_bytes)),
            ("header_bytes".to_string(), Column::Int(rows.header_bytes.clone())),
            ("aead_tag_bytes".to_string(), Column::Int(rows.aead_tag_bytes.clone())),
            ("ack_eliciting".to_string(), Column::Bool(rows.ack_eliciting.clone())),
            ("decrypted".to_string(), Column::Bool(rows.decrypted.clone())),
            ("frames_complete".to_string(), Column::Bool(rows.frames_complete.clone())),
            ("exponent".to_string(), Column::Dense(exponent)),
        ];
        out.set_item("packets", ArrowTable::new(packets, count).into_py(py))?;
        let packet_row: Vec<i64> = rows
            .frame_count
            .iter()
            .enumerate()
            .flat_map(|(row, count)| std::iter::repeat_n(row as i64, *count as usize))
            .collect();
        let rows = &self.frames;
        let count = rows.len();
        let ecn = |which: usize| {
            Column::SparseInt(count, rows.ecn.iter().map(|(row, counts)| (*row, counts[which])).collect())
        };
        let ack_frequency = |which: usize| {
            Column::SparseInt(count, rows.ack_frequency.iter().map(|(row, fields)| (*row, fields[which])).collect())
        };
        let max_delay =
            rows.ack_frequency.iter().map(|(row, fields)| (*row, fields[2] as f64 / 1000.0)).collect();
        let mut frames = vec![
            ("packet_row".to_string(), Column::Dense(packet_row)),
            ("frame_index".to_string(), ints(&rows.frame_index)),
            ("frame_type".to_string(), names(&FRAME_NAMES, &rows.frame_type)),
            ("frame_bytes".to_string(), ints(&rows.frame_bytes)),
            ("ack_delay_raw".to_string(), unsigned(&rows.ack_delay_raw)),
            ("largest_acked".to_string(), unsigned(&rows.largest_acked)),
            ("first_ack_range".to_string(), unsigned(&rows.first_ack_range)),
            ("ack_ranges".to_string(), rows.ack_ranges_column(ack_ranges_as_lists)),
            ("stream_id".to_string(), unsigned(&rows.stream_id)),
            ("offset".to_string(), unsigned(&rows.offset)),
            ("length".to_string(), unsigned(&rows.length)),
            ("fin".to_string(), Column::Bool(rows.fin.clone())),
            ("ecn_ect0".to_string(), ecn(0)),
            ("ecn_ect1".to_string(), ecn(1)),
            ("ecn_ce".to_string(), ecn(2)),
            ("ack_frequency_sequence".to_string(), ack_frequency(0)),
            ("ack_eliciting_threshold".to_string(), ack_frequency(1)),
            ("request_max_ack_delay_ms".to_string(), Column::SparseFloat(count, max_delay)),
            ("reordering_threshold".to_string(), ack_frequency(3)),
        ];
        let mut tls_messages: Vec<Option<Vec<String>>> = Vec::with_capacity(count);
        for names in &rows.tls_messages {
            tls_messages.push(match names {
                None => None,
                Some(names) => names.bind(py).extract::<Option<Vec<String>>>()?,
            });
        }
        frames.push(("tls_messages".to_string(), Column::TextList(tls_messages)));
        out.set_item("frames", ArrowTable::new(frames, count).into_py(py))?;
        Ok(out)
    }
}
