//! The twin of `quicack.scan.identify.ConnectionIdentifier` and of the datagram matching of
//! `quicack.scan.scan_capture._Matcher`: which connection each datagram of a scan capture belongs to, who that
//! connection was for (the client's Source Connection ID, the addresses, the SNI of its ClientHello), and the
//! decoder's datagram rows tied to those connections.
//!
//! `quicack scan` read the capture a second time in Python for this (every datagram a Python object, the
//! ClientHello decrypted with the pure-Python keys): a `PcapLane` given a `ScanIdentifier` (`identifier`) feeds
//! it every plain UDP datagram itself; the datagrams the Python reader makes of other records (fragments, ...)
//! come in through `add`. Same rules, same numbers: tests/test_scan_identify_core.py compares both on the
//! recorded scan captures.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use pyo3::prelude::*;

use crate::keys::{initial_keys, supported_version, PacketKeys};
use crate::link::{address_key, parse_address, Udp};
use crate::rows::FrameRows;

const CLIENT_HELLO: u8 = 1;
const EXTENSION_SERVER_NAME: u64 = 0;
const HOST_NAME: u8 = 0;
const MAX_CLIENT_HELLO_BYTES: u64 = 16_384; // identify.MAX_CLIENT_HELLO_BYTES
const MAX_HELLO_PACKETS: u32 = 8; // identify.MAX_HELLO_PACKETS
const MATCH_WINDOW: usize = 64; // scan_capture.MATCH_WINDOW
const MAX_CID_BYTES: usize = 20;
const VERSION_2: u32 = 0x6B33_43CF;
const VERSION_2_PROVISIONAL: u32 = 0x709A_50C4;

type Endpoint = ([u8; 16], u16);
/// Gives a datagram's source and destination addresses as text (called when it starts a connection).
type AddressTexts<'t> = dyn FnMut(&Datagram<'_>) -> (Arc<str>, Arc<str>) + 't;

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum LongType {
    Initial,
    ZeroRtt,
    Handshake,
    Retry,
    VersionNegotiation,
}

/// The parts of a long header the identify pass uses (`quic.LongHeader`): ranges into the datagram.
#[derive(Debug, PartialEq)]
pub struct LongHeader {
    pub packet_type: LongType,
    pub version: u32,
    pub dcid: (usize, usize),
    pub scid: (usize, usize),
    pub pn_offset: usize,
    pub packet_bytes: usize,
}

/// `quic.read_varint`: None where it raises HeaderError.
fn read_varint(data: &[u8], position: usize) -> Option<(u64, usize)> {
    let first = *data.get(position)?;
    let length = 1usize << (first >> 6);
    if position + length > data.len() {
        return None;
    }
    let value = data[position + 1..position + length].iter().fold(u64::from(first & 0x3F), |v, b| (v << 8) | u64::from(*b));
    Some((value, position + length))
}

/// `quic.parse_long_header(data, start, wire_end)`, None where it raises (HeaderError, UnknownVersionError): the
/// same checks in the same order for every version `versions.quic_version` reads, the drafts before -22 with
/// draft-22's layout and at most 20-byte connection IDs (`QuicVersion.tentative`).
pub fn parse_long_header(data: &[u8], start: usize, wire_end: Option<usize>) -> Option<LongHeader> {
    let end = data.len();
    if start + 7 > end {
        return None;
    }
    let version = u32::from_be_bytes([data[start + 1], data[start + 2], data[start + 3], data[start + 4]]);
    let supported = version != 0 && supported_version(version);
    let tentative = (0xFF00_0000..0xFF00_0016).contains(&version); // drafts before -22
    let first = data[start];
    let dcid_length = usize::from(data[start + 5]);
    let mut position = start + 6;
    if dcid_length > MAX_CID_BYTES && supported {
        return None;
    }
    let dcid = (position.min(end), (position + dcid_length).min(end));
    position += dcid_length;
    if position >= end {
        return None;
    }
    let scid_length = usize::from(data[position]);
    position += 1;
    let scid = (position.min(end), (position + scid_length).min(end));
    position += scid_length;
    if position > end {
        return None;
    }
    if tentative && (dcid.1 - dcid.0 > MAX_CID_BYTES || scid.1 - scid.0 > MAX_CID_BYTES) {
        return None;
    }
    let header = |packet_type, pn_offset, packet_bytes| LongHeader { packet_type, version, dcid, scid, pn_offset, packet_bytes };
    if version == 0 {
        return Some(header(LongType::VersionNegotiation, end - start, end - start));
    }
    if !supported {
        return None;
    }
    let bits = (first >> 4) & 0x03;
    let types = if version == VERSION_2 || version == VERSION_2_PROVISIONAL {
        [LongType::Retry, LongType::Initial, LongType::ZeroRtt, LongType::Handshake]
    } else {
        [LongType::Initial, LongType::ZeroRtt, LongType::Handshake, LongType::Retry]
    };
    let packet_type = types[usize::from(bits)];
    if packet_type == LongType::Retry {
        return Some(header(packet_type, end - start, end - start));
    }
    if packet_type == LongType::Initial {
        let (token_length, next) = read_varint(data, position)?;
        position = next.saturating_add(usize::try_from(token_length).unwrap_or(usize::MAX));
    }
    let (length, next) = read_varint(data, position)?;
    let limit = wire_end.unwrap_or(end) as u128;
    if next as u128 + u128::from(length) > limit {
        return None;
    }
    let length = length as usize; // fits: bounded by the datagram's size
    Some(header(packet_type, next - start, next - start + length))
}

/// `identify.client_hello_sni`: the host name of a ClientHello's server_name extension, or None.
pub fn client_hello_sni(body: &[u8]) -> Option<String> {
    let at = |position: usize| body.get(position).copied().map(usize::from);
    let number = |from: usize, to: usize| -> u64 {
        let to = to.min(body.len());
        body[from.min(to)..to].iter().fold(0, |v, b| (v << 8) | u64::from(*b))
    };
    let mut position = 2 + 32;
    position += 1 + at(position)?; // legacy_session_id
    position += 2 + number(position, position + 2) as usize; // cipher_suites
    position += 1 + at(position)?; // legacy_compression_methods
    let end = position + 2 + number(position, position + 2) as usize;
    position += 2;
    while position + 4 <= end.min(body.len()) {
        let extension_type = number(position, position + 2);
        let length = number(position + 2, position + 4) as usize;
        position += 4;
        if extension_type == EXTENSION_SERVER_NAME {
            let to = (position + length).min(body.len());
            let names = &body[position.min(to)..to];
            let mut cursor = 2; // server_name_list length
            while cursor + 3 <= names.len() {
                let name_type = names[cursor];
                let name_length = ((usize::from(names[cursor + 1])) << 8) | usize::from(names[cursor + 2]);
                let to = (cursor + 3 + name_length).min(names.len());
                let name = &names[cursor + 3..to];
                if name_type == HOST_NAME {
                    // bytes.decode("ascii", errors="replace")
                    return Some(name.iter().map(|b| if *b < 0x80 { char::from(*b) } else { '\u{FFFD}' }).collect());
                }
                cursor += 3 + name_length;
            }
            return None;
        }
        position += length;
    }
    None
}

/// The ClientHello being reassembled from the client's Initial packets (`CapturedConnection`'s keys, hello,
/// pending, largest_pn and tries); dropped once done.
struct Hello {
    keys: PacketKeys,
    hello: Vec<u8>,
    pending: BTreeMap<u64, Vec<u8>>,
    largest_pn: i64,
    tries: u32,
}

struct Captured {
    client: Endpoint,
    server: Endpoint,
    client_text: Arc<str>,
    server_text: Arc<str>,
    client_scid: Vec<u8>,
    original_dcid: Vec<u8>,
    first_time_abs_ns: i64,
    sni: Option<String>,
    hello: Option<Box<Hello>>,
}

/// A datagram as the identify pass sees it: addresses as keys and as text (made only for a new connection).
pub struct Datagram<'a> {
    pub time_abs_ns: i64,
    pub udp_payload_bytes: usize,
    pub src: [u8; 16],
    pub src_port: u16,
    pub dst: [u8; 16],
    pub dst_port: u16,
    pub payload: &'a [u8],
}

#[pyclass(module = "quicack_core", name = "ScanIdentifier")]
#[derive(Default)]
pub struct ScanIdentifier {
    flows: HashMap<(Endpoint, Endpoint), usize>,
    connections: Vec<Captured>,
    texts: HashMap<[u8; 16], Arc<str>>,
    // (time_abs_ns, udp_payload_bytes, connection) of the datagrams read and not matched yet, in file order
    owners: VecDeque<(i64, i64, i64)>,
    frames: FrameRows,
    /// Decoder datagram rows that no datagram of this pass matched (`_Matcher.unmatched`).
    #[pyo3(get)]
    unmatched: i64,
}

impl ScanIdentifier {
    /// A plain UDP datagram the lane read (`ConnectionIdentifier.add` and `datagram_owners`).
    pub fn add_udp(&mut self, time_abs_ns: i64, udp: &Udp<'_>) {
        let (src, dst) = (udp.src, udp.dst);
        let datagram = Datagram {
            time_abs_ns,
            udp_payload_bytes: udp.udp_payload_bytes,
            src: address_key(src),
            src_port: udp.src_port,
            dst: address_key(dst),
            dst_port: udp.dst_port,
            payload: udp.payload,
        };
        // the texts are made only when a connection starts (they name its addresses), each address's once
        let mut texts = std::mem::take(&mut self.texts);
        let mut text = |key: [u8; 16], address: &[u8]| -> Arc<str> {
            texts.entry(key).or_insert_with(|| Arc::from(crate::engine::address_text(address))).clone()
        };
        let found = self.add_datagram(&datagram, &mut |d: &Datagram<'_>| (text(d.src, src), text(d.dst, dst)));
        self.texts = texts;
        if let Some(number) = found {
            self.owners.push_back((time_abs_ns, udp.udp_payload_bytes as i64, number));
        }
    }

    /// The connection number of a datagram, or None when it starts no QUIC flow (`ConnectionIdentifier.add`).
    pub fn add_datagram(
        &mut self,
        datagram: &Datagram<'_>,
        texts: &mut AddressTexts<'_>,
    ) -> Option<i64> {
        let source = (datagram.src, datagram.src_port);
        let key = (source, (datagram.dst, datagram.dst_port));
        let mut index = self.flows.get(&key).copied();
        if let Some(found) = index {
            let connection = &self.connections[found];
            if source == connection.client {
                if let Some(scid) = client_initial_scid(datagram) {
                    if scid != &connection.client_scid[..] {
                        index = None; // the client's port was reused for a new connection (the decoder's rule too)
                    }
                }
            }
        }
        let index = match index {
            Some(index) => index,
            None => self.new_connection(datagram, texts)?,
        };
        let connection = &mut self.connections[index];
        if connection.hello.is_some() && source == connection.client {
            read_client_hello(connection, datagram.payload, &mut self.frames);
        }
        Some(index as i64 + 1)
    }

    fn new_connection(
        &mut self,
        datagram: &Datagram<'_>,
        texts: &mut AddressTexts<'_>,
    ) -> Option<usize> {
        let payload = datagram.payload;
        if payload.is_empty() || payload[0] & 0x80 == 0 {
            return None; // a short header on an unknown flow: the decoder only adopts it by a known CID (migration)
        }
        let header = parse_long_header(payload, 0, Some(datagram.udp_payload_bytes))?;
        if header.packet_type == LongType::VersionNegotiation {
            return None;
        }
        let source = (datagram.src, datagram.src_port);
        let destination = (datagram.dst, datagram.dst_port);
        let (source_text, destination_text) = texts(datagram);
        let bytes = |(from, to): (usize, usize)| payload[from..to].to_vec();
        let (client, server, client_scid, original_dcid, client_is_src) =
            if matches!(header.packet_type, LongType::Initial | LongType::ZeroRtt) {
                (source, destination, bytes(header.scid), bytes(header.dcid), true)
            } else {
                // the capture missed the client's first Initial: the client is the side with the higher port
                let client_is_src = datagram.src_port > datagram.dst_port;
                if client_is_src {
                    (source, destination, bytes(header.scid), Vec::new(), true)
                } else {
                    (destination, source, bytes(header.dcid), Vec::new(), false)
                }
            };
        let (client_text, server_text) =
            if client_is_src { (source_text, destination_text) } else { (destination_text, source_text) };
        let hello = if header.packet_type != LongType::Initial || source != client {
            None
        } else {
            initial_keys(&payload[header.dcid.0..header.dcid.1], header.version).map(|(keys, _)| {
                Box::new(Hello { keys, hello: Vec::new(), pending: BTreeMap::new(), largest_pn: -1, tries: 0 })
            })
        };
        let index = self.connections.len();
        self.connections.push(Captured {
            client,
            server,
            client_text,
            server_text,
            client_scid,
            original_dcid,
            first_time_abs_ns: datagram.time_abs_ns,
            sni: None,
            hello,
        });
        self.flows.insert((client, server), index);
        self.flows.insert((server, client), index);
        Some(index)
    }
}

/// `identify._client_initial_scid`: the Source Connection ID of a datagram's first packet if it is an Initial.
fn client_initial_scid<'a>(datagram: &Datagram<'a>) -> Option<&'a [u8]> {
    let payload = datagram.payload;
    if payload.is_empty() || payload[0] & 0x80 == 0 {
        return None;
    }
    let header = parse_long_header(payload, 0, Some(datagram.udp_payload_bytes))?;
    (header.packet_type == LongType::Initial).then(|| &payload[header.scid.0..header.scid.1])
}

/// `ConnectionIdentifier._read_client_hello`: decrypt the client's Initial packets of this datagram until the
/// ClientHello is whole, then read its SNI.
fn read_client_hello(connection: &mut Captured, payload: &[u8], frames: &mut FrameRows) {
    let mut position = 0;
    while position < payload.len() && payload[position] & 0x80 != 0 && connection.hello.is_some() {
        let Some(header) = parse_long_header(payload, position, None) else {
            return;
        };
        if header.packet_type == LongType::Initial {
            let hello = connection.hello.as_mut().expect("checked by the loop");
            hello.tries += 1;
            let end = position + header.packet_bytes;
            let expected = hello.largest_pn + 1;
            if let Ok(packet) = hello.keys.decrypt_packet(payload, position, header.pn_offset, end, expected, false) {
                hello.largest_pn = hello.largest_pn.max(packet.packet_number);
                let walk = frames.walk(&packet.payload);
                frames.truncate(0);
                crate::keys::recycle(packet.payload);
                for (_, offset, data) in &walk.crypto {
                    add_crypto(connection, *offset, data);
                }
            }
            if connection.hello.as_ref().is_some_and(|hello| hello.tries >= MAX_HELLO_PACKETS) {
                connection.hello = None;
            }
        }
        position += header.packet_bytes;
    }
}

/// `identify._add_crypto`: one CRYPTO frame of the client's Initial stream.
fn add_crypto(connection: &mut Captured, offset: u64, data: &[u8]) {
    let Some(state) = connection.hello.as_mut() else {
        return;
    };
    let hello = &mut state.hello;
    let end = offset + data.len() as u64;
    let have = hello.len() as u64;
    if offset > have {
        if state.pending.len() < MAX_HELLO_PACKETS as usize {
            state.pending.insert(offset, data.to_vec());
        }
        return;
    }
    if end > have {
        hello.extend_from_slice(&data[(have - offset) as usize..]);
    }
    let offsets: Vec<u64> = state.pending.keys().copied().collect();
    for pending_offset in offsets {
        if pending_offset <= hello.len() as u64 {
            let piece = state.pending.remove(&pending_offset).expect("listed");
            let have = hello.len() as u64;
            if pending_offset + piece.len() as u64 > have {
                hello.extend_from_slice(&piece[(have - pending_offset) as usize..]);
            }
        }
    }
    if hello.len() >= 4 {
        if hello[0] != CLIENT_HELLO {
            connection.hello = None;
            return;
        }
        let length = (u64::from(hello[1]) << 16) | (u64::from(hello[2]) << 8) | u64::from(hello[3]);
        if hello.len() as u64 >= 4 + length {
            connection.sni = client_hello_sni(&hello[4..4 + length as usize]);
            connection.hello = None;
        } else if length > MAX_CLIENT_HELLO_BYTES {
            connection.hello = None;
        }
    }
}

#[pymethods]
impl ScanIdentifier {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// A datagram the Python reader made (of a record the lane hands back): `ConnectionIdentifier.add`.
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        time_abs_ns: i64,
        src: &str,
        dst: &str,
        src_port: u16,
        dst_port: u16,
        udp_payload_bytes: usize,
        payload: &[u8],
    ) -> PyResult<()> {
        let datagram = Datagram {
            time_abs_ns,
            udp_payload_bytes,
            src: parse_address(src)?,
            src_port,
            dst: parse_address(dst)?,
            dst_port,
            payload,
        };
        let (src_text, dst_text): (Arc<str>, Arc<str>) = (Arc::from(src), Arc::from(dst));
        let found = self.add_datagram(&datagram, &mut |_| (src_text.clone(), dst_text.clone()));
        if let Some(number) = found {
            self.owners.push_back((time_abs_ns, udp_payload_bytes as i64, number));
        }
        Ok(())
    }

    /// Datagrams read and not matched yet.
    fn pending(&self) -> usize {
        self.owners.len()
    }

    /// `_Matcher.connections_of` for the rows from `start` on: each row's connection (None: not matched) while
    /// at least MATCH_WINDOW datagrams are read ahead, or all rows once the capture is read (`finished`). Returns
    /// the connections of the rows matched; the caller reads more of the capture and asks again for the rest.
    fn match_rows(&mut self, times: Vec<i64>, sizes: Vec<i64>, start: usize, finished: bool) -> Vec<Option<i64>> {
        let mut found = Vec::with_capacity(times.len().saturating_sub(start));
        for (time_abs_ns, size) in times.iter().zip(&sizes).skip(start) {
            if !finished && self.owners.len() < MATCH_WINDOW {
                break;
            }
            let window = self.owners.len().min(MATCH_WINDOW);
            let position = self.owners.iter().take(window).position(|owner| owner.0 == *time_abs_ns && owner.1 == *size);
            match position {
                Some(position) => {
                    let owner = self.owners[position];
                    self.owners.drain(..=position); // datagrams before the match are ones the decoder skipped
                    found.push(Some(owner.2));
                }
                None => {
                    self.unmatched += 1;
                    found.push(None);
                }
            }
        }
        found
    }

    /// The connections as columns (`ConnectionIdentifier.connection_frame`'s, in its order): connection,
    /// client_scid, original_dcid, client_address, client_port, server_address, server_port, first_time_abs_ns,
    /// client_hello_sni.
    #[allow(clippy::type_complexity)]
    fn columns(
        &self,
    ) -> (
        Vec<i64>,
        Vec<String>,
        Vec<Option<String>>,
        Vec<String>,
        Vec<u16>,
        Vec<String>,
        Vec<u16>,
        Vec<i64>,
        Vec<Option<String>>,
    ) {
        let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let c = &self.connections;
        (
            (1..=c.len() as i64).collect(),
            c.iter().map(|c| hex(&c.client_scid)).collect(),
            c.iter().map(|c| (!c.original_dcid.is_empty()).then(|| hex(&c.original_dcid))).collect(),
            c.iter().map(|c| c.client_text.to_string()).collect(),
            c.iter().map(|c| c.client.1).collect(),
            c.iter().map(|c| c.server_text.to_string()).collect(),
            c.iter().map(|c| c.server.1).collect(),
            c.iter().map(|c| c.first_time_abs_ns).collect(),
            c.iter().map(|c| c.sni.clone()).collect(),
        )
    }
}

#[cfg(test)]
#[path = "tests/identify.rs"]
mod tests;
