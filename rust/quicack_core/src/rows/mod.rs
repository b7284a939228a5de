//! The row buffers of one batch (datagrams, packets, frames): the same interface and the same rows as
//! `quicack.pcap.columns.RowBuffers`, filled by the frame walker (`frames`) and by the capture lane.

/// Cut every listed column to `length` rows.
macro_rules! truncate_columns {
    ($length:expr; $($column:expr),+ $(,)?) => {
        $($column.truncate($length);)+
    };
}

mod frames;

use pyo3::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;

use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::arrow::{ArrowTable, Column};
use crate::keys::PacketKeys;
use crate::PacketNumbers;

pub use frames::{FrameRows, Walk};

pub const PACKET_TYPES: [&str; 8] =
    ["initial", "0rtt", "handshake", "retry", "1rtt", "version_negotiation", "unknown", "datagram_padding"];
pub const PN_SPACES: [&str; 3] = ["initial", "handshake", "appdata"];
pub const DIRECTIONS: [&str; 2] = ["c2s", "s2c"];
pub const PACKET_1RTT: u8 = 4;
pub const SPACE_APPDATA: u8 = 2;

pub fn code_of(names: &[&str], name: &str) -> PyResult<u8> {
    names
        .iter()
        .position(|candidate| *candidate == name)
        .map(|index| index as u8)
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("unknown name {name:?}")))
}

row_columns!(
    /// Datagram rows (`quicack.pcap.columns.DATAGRAM_COLUMNS`); `direction` as a code of DIRECTIONS.
    pub struct DatagramRows, row DatagramRow, table datagrams {
        connection_odcid: Arc<str>,
        direction: u8 [DIRECTIONS],
        datagram_index: i64,
        time_ms: f64,
        time_abs_ns: i64,
        ip_header_bytes: i64,
        udp_payload_bytes: i64,
        quic_packets: i64,
    }
);

row_columns!(
    /// Packet rows (`quicack.pcap.columns.PACKET_COLUMNS`): the columns a packet does not share with its datagram
    /// (spread over its packets at batch time by `datagram_row`), how many frame rows follow it and its sender
    /// (whose ACK delay exponent scales the ACK delays of its frames).
    pub struct PacketRows, row PacketRow, table packets {
        #[reader] datagram_row: i64,
        packet_type: u8 [PACKET_TYPES],
        pn_space: Option<u8> [PN_SPACES],
        packet_number: Option<i64>,
        packet_bytes: i64,
        header_bytes: Option<i64>,
        aead_tag_bytes: Option<i64>,
        ack_eliciting: Option<bool>,
        decrypted: Option<bool>,
        frames_complete: Option<bool>,
    }
    internal {
        frame_count: i64,
        sender: Option<Py<PyAny>>,
    }
);

/// All rows of one batch.
#[pyclass(module = "quicack_core", name = "RowBuffers")]
#[derive(Default)]
pub struct RowBuffers {
    pub datagrams: DatagramRows,
    pub packets: PacketRows,
    pub frames: FrameRows,
}

impl RowBuffers {
    pub fn datagrams_len(&self) -> usize {
        self.datagrams.direction.len()
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
        self.datagrams.push(DatagramRow {
            connection_odcid: odcid,
            direction,
            datagram_index,
            time_ms,
            time_abs_ns,
            ip_header_bytes,
            udp_payload_bytes,
            quic_packets,
        });
    }

    pub fn push_packet(&mut self, mut row: PacketRow) {
        // Version Negotiation and Retry are "decrypted" and have no frames to stop at; opaque packets: unknown.
        if row.frames_complete.is_none() && row.decrypted == Some(true) {
            row.frames_complete = Some(true);
        }
        self.packets.push(row);
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
        (self.datagrams.direction.len(), self.packets.datagram_row.len(), self.frames.len())
    }

    fn datagram_count(&self) -> usize {
        self.datagrams.direction.len()
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
        self.datagrams.truncate(datagrams);
        self.packets.truncate(packets);
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
        let count = self.datagrams.direction.len();
        let datagrams = self.datagrams.to_arrow();
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
        let mut packets = rows.to_arrow();
        packets.push(("exponent".to_string(), Column::Dense(exponent)));
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
        let mut frames = vec![("packet_row".to_string(), Column::Dense(packet_row))];
        frames.extend(rows.columns.to_arrow());
        frames.extend([
            ("ack_ranges".to_string(), rows.ack_ranges_column(ack_ranges_as_lists)),
            ("ecn_ect0".to_string(), ecn(0)),
            ("ecn_ect1".to_string(), ecn(1)),
            ("ecn_ce".to_string(), ecn(2)),
            ("ack_frequency_sequence".to_string(), ack_frequency(0)),
            ("ack_eliciting_threshold".to_string(), ack_frequency(1)),
            ("request_max_ack_delay_ms".to_string(), Column::SparseFloat(count, max_delay)),
            ("reordering_threshold".to_string(), ack_frequency(3)),
        ]);
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
