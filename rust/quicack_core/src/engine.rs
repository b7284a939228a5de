//! The fast lane of the capture decoder: reads a classic pcap stream record by record and decodes, by itself,
//! the datagrams that are one short header packet of a flow the Python decoder has registered (1-RTT keys,
//! connection ID length and the sender's transport parameters known). Everything else goes back to the
//! Python decoder as it would have come from `reader.read_udp`, in file order, so both write the same rows.
//! A pcapng stream is cut into the same records by pcapng.rs.
//! A datagram that starts with long header packets (Initial, Handshake; a 1-RTT packet may follow) is decoded
//! here too when the flow's Initial and Handshake keys are registered and nothing in it would change what the
//! Python decoder knows but its CRYPTO frames: see `decode_long`.

use std::collections::HashMap;
use std::io::{Read, Seek};
use std::net::IpAddr;
use std::sync::Arc;

use pcap_parser::nom;
use pcap_parser::{parse_pcap_frame, parse_pcap_frame_be};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};

use crate::identify::ScanIdentifier;
use crate::keys::PacketKeys;
use crate::link::{address_key, parse_address, plain_tcp_ip, plain_udp, TcpIp, Udp};
use crate::tcp::{tcp_fields, Segment, TcpFields, TcpRows};
use crate::rows::{code_of, PacketRow, RowBuffers, Walk, DIRECTIONS, PACKET_1RTT, PACKET_TYPES, SPACE_APPDATA};
use crate::PacketNumbers;

#[path = "pcapng.rs"]
mod pcapng;
use pcapng::{Block, Blocks};

const CHUNK_BYTES: usize = 1 << 20;
const MAX_RECORD_BYTES: u32 = 0x400_0000;
const GSO_MIN_BYTES: usize = 1500;
const AEAD_TAG_BYTES: i64 = 16;
const VERSION_1: u32 = 0x0000_0001;
const VERSION_2: u32 = 0x6B33_43CF;
const MAX_CID_BYTES: usize = 20;
// PACKET_TYPES codes of the long header packets the lane decodes, and of the zeros after a datagram's last packet
const PACKET_INITIAL: u8 = 0;
const PACKET_HANDSHAKE: u8 = 2;
const PACKET_PADDING: u8 = 7;

type FlowKey = ([u8; 16], u16, [u8; 16], u16);

struct FastFlow {
    connection: Py<PyAny>,
    odcid: Arc<str>,
    direction: u8,
    time_origin_ns: i64,
    cid_length: usize,
    keys: Py<PacketKeys>,
    numbers: Py<PacketNumbers>,
    sender: Py<PyAny>,
    long: Option<LongHeaders>,
    // whether a datagram cut by the capture's snap length (a short header packet first) is added here as the
    // Python decoder adds it: one 1-RTT packet row, not decrypted (its version read, not a tentative draft)
    cut_datagrams: bool,
}

/// Datagrams cut by the snap length that the lane added: the Python decoder reports them (one issue, its first
/// examples) until it says it has all the examples it shows (`quiet`); then the lane only counts them.
#[derive(Default)]
struct CutDatagrams {
    quiet: bool,
    count: i64,
}

/// What the lane needs to decode a flow's long header packets as the Python decoder would
/// (`decode._add_long_header_packet`) without changing its state beyond packet numbers and rows.
struct LongHeaders {
    version: u32,              // the connection's version (v1 or v2): a packet of another one goes to Python
    initial: Py<PacketKeys>,   // this direction's Initial keys
    handshake: Option<Py<PacketKeys>>,
    scid: Vec<u8>,             // the sender's Source Connection ID, one the decoder already knows
}

#[pyclass(module = "quicack_core", name = "PcapLane")]
pub struct PcapLane {
    stream: Py<PyAny>,
    // The capture itself when it is a plain file: read straight into `buffer` (the Python stream's read cost a
    // bytes object and a second copy per chunk, about 0.1 s per 700 MB). Compressed captures go through `stream`.
    file: Option<std::fs::File>,
    buffer: Vec<u8>,
    position: usize,
    consumed: usize, // file offset of buffer[0], for the messages that name a byte (as reader._read_pcap)
    max_record_bytes: u32, // quicack.reading.limits' max_record_bytes
    big_endian: bool,
    nanoseconds: bool,
    linktype: u32,
    number: i64,
    last_record: Option<i64>, // the last record handed out (decoded or not): where a read error is reported
    finished: bool,
    flows: HashMap<FlowKey, FastFlow>,
    names: HashMap<Vec<u8>, Py<PyString>>,
    datagram_counts: [i64; 2],
    pcapng: Option<Blocks>, // a pcapng stream's state (pcapng.rs); None for classic pcap
    cut: CutDatagrams,
    tcp_segments: bool, // hand plain TCP segments back read (("tcp", ...)), not as records: set by the decoder
    tcp_rows: Option<Py<TcpRows>>, // or add them to these rows (the decoder's `tcp`) without handing them back
    texts: HashMap<Vec<u8>, Arc<str>>, // addresses as text, for `tcp_rows`
    // `quicack scan`'s identify pass: every plain UDP datagram goes to it and counts as decoded (no flows then)
    identifier: Option<Py<ScanIdentifier>>,
}

enum Next {
    Record(i64, i64, usize, usize, i64),
    Issue(i64, &'static str),
    /// a record length beyond max_record_bytes: (record, its length)
    Implausible(i64, u32),
    End,
}

impl PcapLane {
    /// One read of `size` bytes appended to the unread rest of the buffer (one read per refill, as the Python
    /// reader does, so that a damaged compressed stream gives the same records before its error).
    fn refill(&mut self, py: Python<'_>, size: usize) -> PyResult<()> {
        self.consumed += self.position;
        self.buffer.drain(..self.position);
        self.position = 0;
        if let Some(file) = self.file.as_mut() {
            // `size` bytes or up to the end, as BufferedReader.read(size) of a file; io errors become OSError.
            file.take(size as u64).read_to_end(&mut self.buffer)?;
            return Ok(());
        }
        let piece = self.stream.bind(py).call_method1("read", (size,))?;
        self.buffer.extend_from_slice(piece.downcast::<PyBytes>()?.as_bytes());
        Ok(())
    }

    /// The record at `position` as pcap-parser reads it (byte order of the file): Ok when it is whole in the
    /// buffer, else Err(its caplen) (the 16-byte header is there).
    fn frame(&self) -> Result<(u32, u32, u32, u32), u32> {
        let rest = &self.buffer[self.position..];
        let parsed = if self.big_endian { parse_pcap_frame_be(rest) } else { parse_pcap_frame(rest) };
        match parsed {
            Ok((_, block)) => Ok((block.ts_sec, block.ts_usec, block.caplen, block.origlen)),
            // `take(caplen)` after the header: the bytes missing, so caplen is what is there plus those
            Err(nom::Err::Incomplete(nom::Needed::Size(missing))) => Err((rest.len() - 16 + missing.get()) as u32),
            Err(_) => unreachable!("a legacy pcap record with its 16-byte header cannot fail otherwise"),
        }
    }

    /// The next record, as `reader._read_pcap` cuts them (same numbering, same truncation messages).
    fn next_record(&mut self, py: Python<'_>) -> PyResult<Next> {
        if self.finished {
            return Ok(Next::End);
        }
        if self.position + 16 > self.buffer.len() {
            self.refill(py, CHUNK_BYTES)?;
            if self.buffer.is_empty() {
                self.finished = true;
                return Ok(Next::End);
            }
            if self.buffer.len() < 16 {
                self.finished = true;
                return Ok(Next::Issue(self.number + 1, "capture ends inside a record header (truncated file)"));
            }
        }
        self.number += 1;
        let (seconds, fraction, caplen, wire_length) = match self.frame() {
            Ok(frame) if frame.2 <= self.max_record_bytes => frame,
            Err(caplen) if caplen <= self.max_record_bytes => {
                self.refill(py, CHUNK_BYTES.max(caplen as usize + 16))?;
                match self.frame() {
                    Ok(frame) => frame,
                    Err(_) => {
                        self.finished = true;
                        return Ok(Next::Issue(self.number, "capture ends inside a record (truncated file)"));
                    }
                }
            }
            Ok((.., caplen, _)) | Err(caplen) => {
                self.finished = true;
                return Ok(Next::Implausible(self.number, caplen));
            }
        };
        let start = self.position + 16;
        self.position = start + caplen as usize;
        let time = i64::from(seconds) * 1_000_000_000 + i64::from(fraction) * if self.nanoseconds { 1 } else { 1000 };
        Ok(Next::Record(self.number, time, start, start + caplen as usize, i64::from(wire_length)))
    }

    /// ("tcp", the fields of `tcp.TcpSegment` in its order) for a plain TCP segment.
    fn tcp_item(
        names: &mut HashMap<Vec<u8>, Py<PyString>>,
        py: Python<'_>,
        record: i64,
        time: i64,
        ip: &TcpIp<'_>,
        fields: TcpFields,
    ) -> PyObject {
        let src = Self::name(names, py, ip.src);
        let dst = Self::name(names, py, ip.dst);
        let item = PyTuple::new_bound(
            py,
            [
                "tcp".into_py(py),
                record.into_py(py),
                time.into_py(py),
                src.into_py(py),
                dst.into_py(py),
                fields.src_port.into_py(py),
                fields.dst_port.into_py(py),
                ip.ip_bytes.into_py(py),
                ip.ip_header_bytes.into_py(py),
                fields.header_bytes.into_py(py),
                fields.timestamp_option_bytes.into_py(py),
                fields.sack_option_bytes.into_py(py),
                fields.other_option_bytes.into_py(py),
                fields.sack_blocks.into_py(py),
                fields.seq.into_py(py),
                fields.ack.into_py(py),
                fields.flags.into_py(py),
                fields.window.into_py(py),
            ],
        );
        item.into_any().unbind()
    }

    fn text(texts: &mut HashMap<Vec<u8>, Arc<str>>, address: &[u8]) -> Arc<str> {
        if let Some(text) = texts.get(address) {
            return text.clone();
        }
        let text: Arc<str> = Arc::from(address_text(address));
        texts.insert(address.to_vec(), text.clone());
        text
    }

    fn name(names: &mut HashMap<Vec<u8>, Py<PyString>>, py: Python<'_>, address: &[u8]) -> Py<PyString> {
        if let Some(name) = names.get(address) {
            return name.clone_ref(py);
        }
        let name = PyString::new_bound(py, &address_text(address)).unbind();
        names.insert(address.to_vec(), name.clone_ref(py));
        name
    }
}

/// An IPv4 or IPv6 address as text (as `socket.inet_ntop`).
pub(crate) fn address_text(address: &[u8]) -> String {
    if address.len() == 4 {
        IpAddr::from(<[u8; 4]>::try_from(address).expect("4 bytes")).to_string()
    } else {
        IpAddr::from(<[u8; 16]>::try_from(address).expect("16 bytes")).to_string()
    }
}

/// What the fast lane did with one datagram of a registered flow.
enum Fast {
    Done,
    Event(PyObject),
}

#[allow(clippy::too_many_arguments)]
fn decode_fast(
    py: Python<'_>,
    flow: &FastFlow,
    rows: &mut RowBuffers,
    counts: &mut [i64; 2],
    record: i64,
    time_abs_ns: i64,
    udp: &Udp,
    cut: &mut CutDatagrams,
) -> Option<Fast> {
    let payload = udp.payload;
    if !payload.is_empty() && payload[0] & 0x80 != 0 && payload.len() == udp.udp_payload_bytes {
        return decode_long(py, flow, flow.long.as_ref()?, rows, counts, record, time_abs_ns, udp);
    }
    if flow.cut_datagrams && !payload.is_empty() && payload[0] & 0x80 == 0 && payload.len() < udp.udp_payload_bytes {
        return Some(add_cut(py, flow, rows, counts, record, time_abs_ns, udp, cut));
    }
    if payload.is_empty()
        || payload[0] & 0x80 != 0
        || payload.len() != udp.udp_payload_bytes
        || payload.len() > GSO_MIN_BYTES
    {
        return None;
    }
    let direction = flow.direction;
    let numbers = flow.numbers.bind(py);
    let expected = numbers.borrow().get(direction, SPACE_APPDATA) + 1;
    let packet = {
        let mut keys = flow.keys.bind(py).borrow_mut();
        keys.decrypt_packet(payload, 0, 1 + flow.cid_length, payload.len(), expected, true).ok()?
    };
    counts[direction as usize] += 1;
    let datagram_index = counts[direction as usize];
    let packet_number = packet.packet_number;
    if packet_number >= expected {
        numbers.borrow_mut().set(direction, SPACE_APPDATA, packet_number);
    }
    let datagram_row = rows.datagrams_len() as i64;
    let walk = rows.walk_frames(&packet.payload);
    crate::keys::recycle(packet.payload);
    let (complete, ack_eliciting, count) = (walk.unknown.is_none(), walk.ack_eliciting, walk.count);
    let event = if walk.unknown.is_some() || !walk.crypto.is_empty() || !walk.new_cids.is_empty() {
        Some(RowBuffers::walk_result(py, walk))
    } else {
        None
    };
    rows.push_packet(PacketRow {
        datagram_row,
        packet_type: PACKET_1RTT,
        packet_bytes: payload.len() as i64,
        pn_space: Some(SPACE_APPDATA),
        packet_number: Some(packet_number),
        header_bytes: Some(packet.header_bytes as i64),
        aead_tag_bytes: Some(AEAD_TAG_BYTES),
        ack_eliciting: Some(ack_eliciting),
        decrypted: Some(true),
        frames_complete: Some(complete),
        frame_count: count,
        sender: Some(flow.sender.clone_ref(py)),
    });
    rows.push_datagram(
        flow.odcid.clone(),
        direction,
        datagram_index,
        (time_abs_ns - flow.time_origin_ns) as f64 / 1e6,
        time_abs_ns,
        udp.ip_header_bytes as i64,
        udp.udp_payload_bytes as i64,
        1,
    );
    Some(match event {
        None => Fast::Done,
        Some(walk) => Fast::Event(
            (
                "event",
                flow.connection.clone_ref(py),
                DIRECTIONS[direction as usize],
                packet_number,
                record,
                walk,
            )
                .into_py(py),
        ),
    })
}

/// A datagram of a registered flow cut by the capture's snap length inside its first packet, a short header
/// one: rows as `decode._add_one_datagram` adds them (`_decrypt_and_walk` leaves a cut packet undecrypted, so
/// nothing is decrypted or learnt): the packet as an opaque 1-RTT row of all the datagram's bytes on the wire.
#[allow(clippy::too_many_arguments)]
fn add_cut(
    py: Python<'_>,
    flow: &FastFlow,
    rows: &mut RowBuffers,
    counts: &mut [i64; 2],
    record: i64,
    time_abs_ns: i64,
    udp: &Udp,
    cut: &mut CutDatagrams,
) -> Fast {
    let direction = flow.direction;
    counts[direction as usize] += 1;
    let datagram_row = rows.datagrams_len() as i64;
    rows.push_packet(PacketRow {
        datagram_row,
        packet_type: PACKET_1RTT,
        packet_bytes: udp.udp_payload_bytes as i64,
        pn_space: Some(SPACE_APPDATA),
        packet_number: None,
        header_bytes: None,
        aead_tag_bytes: Some(AEAD_TAG_BYTES),
        ack_eliciting: None,
        decrypted: Some(false),
        frames_complete: None,
        frame_count: 0,
        sender: None,
    });
    rows.push_datagram(
        flow.odcid.clone(),
        direction,
        counts[direction as usize],
        (time_abs_ns - flow.time_origin_ns) as f64 / 1e6,
        time_abs_ns,
        udp.ip_header_bytes as i64,
        udp.udp_payload_bytes as i64,
        1,
    );
    if cut.quiet {
        cut.count += 1;
        return Fast::Done;
    }
    Fast::Event(("cut", record).into_py(py))
}

/// One long header packet of a flow's datagram: (PACKET_TYPES code, pn_offset, packet bytes), or None where
/// `quic.parse_long_header` would fail or give what the lane leaves to Python (another version or Source
/// Connection ID — new connection IDs, a reused client port —, 0-RTT, Retry, Version Negotiation).
fn long_packet(payload: &[u8], start: usize, long: &LongHeaders) -> Option<(u8, usize, usize)> {
    let end = payload.len();
    if start + 7 > end {
        return None;
    }
    let first = payload[start];
    let version = u32::from_be_bytes([payload[start + 1], payload[start + 2], payload[start + 3], payload[start + 4]]);
    if version != long.version {
        return None;
    }
    let dcid_length = usize::from(payload[start + 5]);
    if dcid_length > MAX_CID_BYTES {
        return None;
    }
    let mut position = start + 6 + dcid_length;
    if position >= end {
        return None;
    }
    let scid_length = usize::from(payload[position]);
    position += 1;
    if position + scid_length > end || payload[position..position + scid_length] != long.scid[..] {
        return None;
    }
    position += scid_length;
    let bits = (first >> 4) & 0x03;
    let packet_type = match (version == VERSION_2, bits) {
        (false, 0) | (true, 1) => PACKET_INITIAL,
        (false, 2) | (true, 3) => PACKET_HANDSHAKE,
        _ => return None,
    };
    if packet_type == PACKET_INITIAL {
        let (token_length, next) = varint(payload, position)?;
        position = next.checked_add(usize::try_from(token_length).ok()?)?;
    }
    let (length, next) = varint(payload, position)?;
    let packet_end = next.checked_add(usize::try_from(length).ok()?)?;
    if packet_end > end {
        return None;
    }
    Some((packet_type, next - start, packet_end - start))
}

fn varint(data: &[u8], position: usize) -> Option<(u64, usize)> {
    let first = *data.get(position)?;
    let length = 1usize << (first >> 6);
    if position + length > data.len() {
        return None;
    }
    let mut value = u64::from(first & 0x3F);
    for byte in &data[position + 1..position + length] {
        value = (value << 8) | u64::from(*byte);
    }
    Some((value, position + length))
}

/// A datagram of a registered flow that starts with a long header: its packets (Initial, Handshake, then
/// possibly a 1-RTT packet or zeros) decoded as `decode._add_packets` would, or None — nothing changed but the
/// keys' `used` — when any of them needs the Python decoder: a header it would read differently or learn from,
/// keys it does not have yet, a packet that does not decrypt, two packets of one space.
/// Everything is decrypted before anything is added, so a failure leaves no rows and no packet numbers behind.
#[allow(clippy::too_many_arguments)]
fn decode_long(
    py: Python<'_>,
    flow: &FastFlow,
    long: &LongHeaders,
    rows: &mut RowBuffers,
    counts: &mut [i64; 2],
    record: i64,
    time_abs_ns: i64,
    udp: &Udp,
) -> Option<Fast> {
    let payload = udp.payload;
    let direction = flow.direction;
    // (PACKET_TYPES code, space, start, pn_offset, packet end, short)
    let mut packets: Vec<(u8, u8, usize, usize, usize, bool)> = Vec::with_capacity(3);
    let mut padding = 0;
    let mut position = 0;
    while position < payload.len() {
        if payload[position] & 0x80 != 0 {
            let (packet_type, pn_offset, packet_bytes) = long_packet(payload, position, long)?;
            let space = if packet_type == PACKET_INITIAL { 0 } else { 1 };
            packets.push((packet_type, space, position, pn_offset, position + packet_bytes, false));
            position += packet_bytes;
        } else if payload[position..].iter().all(|byte| *byte == 0) {
            padding = payload.len() - position; // `position` > 0: the first byte has the long header bit
            break;
        } else {
            packets.push((PACKET_1RTT, SPACE_APPDATA, position, 1 + flow.cid_length, payload.len(), true));
            break;
        }
    }
    for (index, packet) in packets.iter().enumerate() {
        if packets[..index].iter().any(|other| other.1 == packet.1) {
            return None;
        }
    }
    let numbers = flow.numbers.bind(py);
    let mut decrypted = Vec::with_capacity(packets.len());
    for &(packet_type, space, start, pn_offset, end, short) in &packets {
        let keys = match packet_type {
            PACKET_INITIAL => &long.initial,
            PACKET_HANDSHAKE => long.handshake.as_ref()?,
            _ => &flow.keys,
        };
        let expected = numbers.borrow().get(direction, space) + 1;
        let mut keys = keys.bind(py).try_borrow_mut().ok()?;
        decrypted.push(keys.decrypt_packet(payload, start, pn_offset, end, expected, short).ok()?);
    }
    counts[direction as usize] += 1;
    let datagram_index = counts[direction as usize];
    let datagram_row = rows.datagrams_len() as i64;
    let mut events: Vec<(u8, i64, Walk)> = Vec::new();
    for (&(packet_type, space, start, _, end, _), packet) in packets.iter().zip(decrypted) {
        let packet_number = packet.packet_number;
        if packet_number > numbers.borrow().get(direction, space) {
            numbers.borrow_mut().set(direction, space, packet_number);
        }
        let walk = rows.walk_frames(&packet.payload);
        crate::keys::recycle(packet.payload);
        rows.push_packet(PacketRow {
            datagram_row,
            packet_type,
            packet_bytes: (end - start) as i64,
            pn_space: Some(space),
            packet_number: Some(packet_number),
            header_bytes: Some(packet.header_bytes as i64),
            aead_tag_bytes: Some(AEAD_TAG_BYTES),
            ack_eliciting: Some(walk.ack_eliciting),
            decrypted: Some(true),
            frames_complete: Some(walk.unknown.is_none()),
            frame_count: walk.count,
            sender: Some(flow.sender.clone_ref(py)),
        });
        if walk.unknown.is_some() || !walk.crypto.is_empty() || !walk.new_cids.is_empty() {
            events.push((packet_type, packet_number, walk));
        }
    }
    if padding > 0 {
        rows.push_packet(PacketRow {
            datagram_row,
            packet_type: PACKET_PADDING,
            packet_bytes: padding as i64,
            pn_space: None,
            packet_number: None,
            header_bytes: None,
            aead_tag_bytes: None,
            ack_eliciting: None,
            decrypted: None,
            frames_complete: None,
            frame_count: 0,
            sender: None,
        });
    }
    rows.push_datagram(
        flow.odcid.clone(),
        direction,
        datagram_index,
        (time_abs_ns - flow.time_origin_ns) as f64 / 1e6,
        time_abs_ns,
        udp.ip_header_bytes as i64,
        udp.udp_payload_bytes as i64,
        packets.len() as i64,
    );
    if events.is_empty() {
        return Some(Fast::Done);
    }
    let walks: Vec<PyObject> = events
        .into_iter()
        .map(|(packet_type, packet_number, walk)| {
            (PACKET_TYPES[packet_type as usize], packet_number, RowBuffers::walk_result(py, walk)).into_py(py)
        })
        .collect();
    Some(Fast::Event(
        ("events", flow.connection.clone_ref(py), DIRECTIONS[direction as usize], record, walks).into_py(py),
    ))
}

#[pymethods]
impl PcapLane {
    /// `head`: the 24-byte pcap file header already read from `stream` (the caller checked the magic). `path`:
    /// the file of an uncompressed `stream`, which the lane then reads itself from byte 24 on.
    #[new]
    #[pyo3(signature = (stream, head, max_record_bytes = MAX_RECORD_BYTES, path = None))]
    fn new(stream: Py<PyAny>, head: &[u8], max_record_bytes: u32, path: Option<std::path::PathBuf>) -> PyResult<Self> {
        if head.len() >= 4 && head[..4] == pcapng::SHB_BYTES {
            return Self::new_pcapng(stream, head, max_record_bytes, path);
        }
        if head.len() != 24 {
            return Err(PyValueError::new_err("a pcap file header is 24 bytes"));
        }
        let magic_le = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let big_endian = !(magic_le == 0xA1B2_C3D4 || magic_le == 0xA1B2_3C4D);
        let magic = if big_endian { u32::from_be_bytes([head[0], head[1], head[2], head[3]]) } else { magic_le };
        let field = [head[20], head[21], head[22], head[23]];
        let linktype = if big_endian { u32::from_be_bytes(field) } else { u32::from_le_bytes(field) } & 0x0FFF_FFFF;
        let file = match path {
            Some(path) => {
                let mut file = std::fs::File::open(path)?;
                file.seek(std::io::SeekFrom::Start(24))?;
                Some(file)
            }
            None => None,
        };
        Ok(PcapLane {
            stream,
            file,
            buffer: Vec::new(),
            position: 0,
            consumed: 24,
            max_record_bytes,
            big_endian,
            nanoseconds: magic == 0xA1B2_3C4D,
            linktype,
            number: 0,
            last_record: None,
            finished: false,
            flows: HashMap::new(),
            names: HashMap::new(),
            datagram_counts: [0, 0],
            pcapng: None,
            cut: CutDatagrams::default(),
            tcp_segments: false,
            tcp_rows: None,
            texts: HashMap::new(),
            identifier: None,
        })
    }

    /// `new` reads pcapng streams (`head`: their first bytes, at least the 4 of the Section Header Block's type).
    #[classattr]
    const PCAPNG: bool = true;

    /// `register` takes the long header arguments (a decoder checks this before passing them).
    #[classattr]
    const LONG_HEADERS: bool = true;

    /// `register` takes `cut_datagrams`; `next` may return ("cut", record) (see `cut_quiet`).
    #[classattr]
    const CUT_DATAGRAMS: bool = true;

    /// Once set, datagrams cut by the snap length that the lane adds are only counted (`cut_count`), not
    /// returned as ("cut", record) items: the decoder has as many examples of that issue as it shows.
    #[setter]
    fn set_cut_quiet(&mut self, quiet: bool) {
        self.cut.quiet = quiet;
    }

    #[getter]
    fn cut_count(&self) -> i64 {
        self.cut.count
    }

    /// Once set, `next` returns a plain TCP segment (what `capture_file.link_to_udp` reads without an issue) as
    /// ("tcp", the fields of `tcp.TcpSegment` in its order), not as a ("record", ...) to convert.
    #[setter]
    fn set_tcp_segments(&mut self, read: bool) {
        self.tcp_segments = read;
    }

    /// Once set, a plain TCP segment is added to these rows (a `TcpRows`: the decoder's, which the Python reader's
    /// segments go to as well, in file order) instead of being handed back.
    #[setter]
    fn set_tcp_rows(&mut self, rows: Option<Py<TcpRows>>) {
        self.tcp_rows = rows;
    }

    /// Once set, every plain UDP datagram read is given to this `ScanIdentifier` (and counted as decoded) instead
    /// of being decoded or handed back; the datagrams of other records come back as before.
    #[setter]
    fn set_identifier(&mut self, identifier: Option<Py<ScanIdentifier>>) {
        self.identifier = identifier;
    }

    /// The next datagram's 1-based index in its direction (the counter the fast lane shares).
    fn next_datagram_index(&mut self, direction: &str) -> PyResult<i64> {
        let code = code_of(&DIRECTIONS, direction)? as usize;
        self.datagram_counts[code] += 1;
        Ok(self.datagram_counts[code])
    }

    /// Decode datagrams of registered flows into `rows` until one needs the Python decoder, `budget` datagrams
    /// were decoded here, or the file ends. Returns (decoded here, item): item is None at the end, "budget",
    /// ("datagram", record, time_abs_ns, src, dst, src_port, dst_port, ip_header_bytes, udp_payload_bytes,
    /// payload), ("record", record, time_abs_ns, linktype, data, wire_length), ("issue", record, message),
    /// ("secrets", key log bytes of a pcapng Decryption Secrets Block) or
    /// ("event", connection, direction, packet_number, record, walk result) for a datagram decoded here
    /// whose CRYPTO frames, new connection IDs or undecodable frames the Python decoder must still see, or
    /// ("cut", record) for a datagram cut by the snap length whose rows the lane added (until `cut_quiet`).
    fn next(&mut self, py: Python<'_>, rows: &Bound<'_, RowBuffers>, budget: usize) -> PyResult<(usize, PyObject)> {
        let mut rows = rows.borrow_mut();
        let mut decoded = 0;
        loop {
            if decoded >= budget {
                return Ok((decoded, "budget".into_py(py)));
            }
            let next = match self.pcapng {
                None => self.next_record(py),
                Some(_) => match self.next_block(py) {
                    Ok(Block::Lane(next)) => Ok(next),
                    Ok(Block::Issue(record, message)) => return Ok((decoded, ("issue", record, message).into_py(py))),
                    Ok(Block::Secrets(start, end)) => {
                        let text = PyBytes::new_bound(py, &self.buffer[start..end]);
                        return Ok((decoded, ("secrets", text).into_py(py)));
                    }
                    Err(error) => Err(error),
                },
            };
            let next = match next {
                Ok(next) => next,
                Err(error) => {
                    // A read error of the stream (a damaged gzip / zstd file): the caller reports it.
                    self.finished = true;
                    return Ok((decoded, ("error", error.into_value(py), self.last_record).into_py(py)));
                }
            };
            let (record, time, data, wire_length) = match next {
                Next::Record(record, time, start, end, wire_length) => (record, time, (start, end), wire_length),
                Next::End => return Ok((decoded, py.None())),
                Next::Implausible(record, caplen) => {
                    let message = format!(
                        "record length {caplen} exceeds {} bytes (limits.max_record_bytes): file corrupt at byte {}, reading stops",
                        self.max_record_bytes,
                        self.consumed + self.position
                    );
                    return Ok((decoded, ("issue", record, message).into_py(py)));
                }
                Next::Issue(record, message) => return Ok((decoded, ("issue", record, message).into_py(py))),
            };
            self.last_record = Some(record);
            let (start, end) = data;
            let data = &self.buffer[start..end];
            let linktype = self.linktype; // a pcapng record's interface's
            let Some(udp) = plain_udp(linktype, data) else {
                if self.tcp_segments || self.tcp_rows.is_some() {
                    let parsed = plain_tcp_ip(linktype, data).and_then(|ip| {
                        let fields = tcp_fields(data, ip.tcp_at, ip.ip_header_bytes, ip.ip_bytes)?;
                        Some((ip, fields))
                    });
                    if let Some((ip, fields)) = parsed {
                        if let Some(rows) = &self.tcp_rows {
                            let src = Self::text(&mut self.texts, ip.src);
                            let dst = Self::text(&mut self.texts, ip.dst);
                            rows.bind(py).borrow_mut().push(Segment {
                                time_abs_ns: time,
                                src: &src,
                                dst: &dst,
                                ip_bytes: ip.ip_bytes as i64,
                                ip_header_bytes: ip.ip_header_bytes as i64,
                                fields,
                            });
                            continue;
                        }
                        return Ok((decoded, Self::tcp_item(&mut self.names, py, record, time, &ip, fields)));
                    }
                }
                let data = &self.buffer[start..end];
                let raw = PyBytes::new_bound(py, data);
                return Ok((decoded, ("record", record, time, linktype, raw, wire_length).into_py(py)));
            };
            if let Some(identifier) = &self.identifier {
                identifier.bind(py).borrow_mut().add_udp(time, &udp);
                decoded += 1;
                continue;
            }
            let key = (address_key(udp.src), udp.src_port, address_key(udp.dst), udp.dst_port);
            if let Some(flow) = self.flows.get(&key) {
                match decode_fast(py, flow, &mut rows, &mut self.datagram_counts, record, time, &udp, &mut self.cut) {
                    Some(Fast::Done) => {
                        decoded += 1;
                        continue;
                    }
                    Some(Fast::Event(event)) => return Ok((decoded + 1, event)),
                    None => {}
                }
            }
            let src = Self::name(&mut self.names, py, udp.src);
            let dst = Self::name(&mut self.names, py, udp.dst);
            let item = PyTuple::new_bound(
                py,
                [
                    "datagram".into_py(py),
                    record.into_py(py),
                    time.into_py(py),
                    src.into_py(py),
                    dst.into_py(py),
                    udp.src_port.into_py(py),
                    udp.dst_port.into_py(py),
                    udp.ip_header_bytes.into_py(py),
                    udp.udp_payload_bytes.into_py(py),
                    PyBytes::new_bound(py, udp.payload).into_py(py),
                ],
            );
            return Ok((decoded, item.into_any().unbind()));
        }
    }

    /// Let the fast lane decode the short header packets sent from (src, src_port) to (dst, dst_port), and with
    /// `version`, `initial` keys and the sender's `scid` (`handshake` keys if known) its long header packets too.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (src, src_port, dst, dst_port, connection, odcid, direction, time_origin_ns, cid_length, keys,
        numbers, sender, version=None, initial=None, handshake=None, scid=None, cut_datagrams=false))]
    fn register(
        &mut self,
        src: &str,
        src_port: u16,
        dst: &str,
        dst_port: u16,
        connection: Py<PyAny>,
        odcid: &str,
        direction: &str,
        time_origin_ns: i64,
        cid_length: usize,
        keys: Py<PacketKeys>,
        numbers: Py<PacketNumbers>,
        sender: Py<PyAny>,
        version: Option<u32>,
        initial: Option<Py<PacketKeys>>,
        handshake: Option<Py<PacketKeys>>,
        scid: Option<Vec<u8>>,
        cut_datagrams: bool,
    ) -> PyResult<()> {
        let key = (parse_address(src)?, src_port, parse_address(dst)?, dst_port);
        let direction = code_of(&DIRECTIONS, direction)?;
        let long = match (version, initial, scid) {
            (Some(version), Some(initial), Some(scid)) if version == VERSION_1 || version == VERSION_2 => {
                Some(LongHeaders { version, initial, handshake, scid })
            }
            _ => None,
        };
        self.flows.insert(
            key,
            FastFlow {
                connection,
                odcid: Arc::from(odcid),
                direction,
                time_origin_ns,
                cid_length,
                keys,
                numbers,
                sender,
                long,
                cut_datagrams,
            },
        );
        Ok(())
    }

    fn unregister(&mut self, src: &str, src_port: u16, dst: &str, dst_port: u16) -> PyResult<()> {
        let key = (parse_address(src)?, src_port, parse_address(dst)?, dst_port);
        self.flows.remove(&key);
        Ok(())
    }
}

#[cfg(test)]
#[path = "tests/engine.rs"]
mod tests;
