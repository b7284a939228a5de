//! The twin of `quicack.pcap.tls`: one CRYPTO stream reassembled far enough to find where each TLS handshake
//! message starts, and the ClientHello, ServerHello and EncryptedExtensions read for the client random, the
//! cipher suite and the ACK-related transport parameters.
//!
//! It keeps the Python version's rules to the letter, malformed input included (tests/test_pcap_engines.py
//! compares the tables of both engines): a short slice reads as fewer bytes (Python slicing never fails), a read
//! of one byte past the end or a cut varint abandons the message, and what was learnt before that stays.

use std::collections::BTreeMap;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

const MAX_PENDING_FRAGMENTS: usize = 64;
const MAX_MESSAGE_STARTS: usize = 256;
const MAX_BUFFERED_BYTES: usize = 1 << 20;
const CLIENT_HELLO: u8 = 1;
const SERVER_HELLO: u8 = 2;
const ENCRYPTED_EXTENSIONS: u8 = 8;
const EXTENSION_QUIC_TRANSPORT_PARAMETERS: [u64; 2] = [0x39, 0xFFA5];
const TP_ACK_DELAY_EXPONENT: u64 = 0x0A;
const TP_MAX_ACK_DELAY: u64 = 0x0B;
const TP_MIN_ACK_DELAY: [u64; 3] = [0xFF04DE1A, 0xFF04DE1B, 0xFF03DE1A];

fn message_name(message_type: u8) -> String {
    match message_type {
        1 => "client_hello",
        2 => "server_hello",
        4 => "new_session_ticket",
        5 => "end_of_early_data",
        8 => "encrypted_extensions",
        11 => "certificate",
        13 => "certificate_request",
        15 => "certificate_verify",
        20 => "finished",
        24 => "key_update",
        25 => "compressed_certificate",
        other => return format!("tls_{other}"),
    }
    .to_string()
}

/// A message that cannot be read any further (Python's IndexError / ValueError).
struct Malformed;

/// data[start:end] as Python slices it: clamped to the data, empty when start is past the end.
fn slice(data: &[u8], start: usize, end: usize) -> &[u8] {
    let end = end.min(data.len());
    &data[start.min(end)..end]
}

/// int.from_bytes(bytes, "big") of at most 8 bytes.
fn big_endian(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |value, byte| (value << 8) | u64::from(*byte))
}

fn byte_at(data: &[u8], position: usize) -> Result<usize, Malformed> {
    data.get(position).map(|byte| usize::from(*byte)).ok_or(Malformed)
}

fn varint(data: &[u8], position: usize) -> Result<(u64, usize), Malformed> {
    let first = byte_at(data, position)?;
    if first < 0x40 {
        return Ok((first as u64, position + 1));
    }
    let length = 1usize << (first >> 6);
    let end = position + length;
    if end > data.len() {
        return Err(Malformed);
    }
    Ok((big_endian(&data[position..end]) & ((1u64 << (8 * length - 2)) - 1), end))
}

#[pyclass(module = "quicack_core", name = "TransportParameters", frozen)]
pub struct TransportParameters {
    #[pyo3(get)]
    ack_delay_exponent: u64,
    #[pyo3(get)]
    max_ack_delay_ms: f64,
    #[pyo3(get)]
    min_ack_delay_us: Option<u64>,
}

fn parse_transport_parameters(data: &[u8]) -> Result<TransportParameters, Malformed> {
    let mut parameters = TransportParameters { ack_delay_exponent: 3, max_ack_delay_ms: 25.0, min_ack_delay_us: None };
    let mut position = 0;
    while position < data.len() {
        let (parameter_id, next) = varint(data, position)?;
        let (length, next) = varint(data, next)?;
        let length = usize::try_from(length).unwrap_or(usize::MAX).min(data.len());
        let value = slice(data, next, next.saturating_add(length));
        position = next + length;
        take_parameter(&mut parameters, parameter_id, value)?;
    }
    Ok(parameters)
}

/// `tls.parse_legacy_transport_parameters`: QUIC drafts up to -26 (a 16-bit list length, 16-bit ids and lengths).
fn parse_legacy_transport_parameters(data: &[u8]) -> Result<TransportParameters, Malformed> {
    let mut parameters = TransportParameters { ack_delay_exponent: 3, max_ack_delay_ms: 25.0, min_ack_delay_us: None };
    let end = data.len().min(2 + big_endian(slice(data, 0, 2)) as usize);
    let mut position = 2;
    while position + 4 <= end {
        let parameter_id = big_endian(&data[position..position + 2]);
        let length = big_endian(&data[position + 2..position + 4]) as usize;
        take_parameter(&mut parameters, parameter_id, slice(data, position + 4, position + 4 + length))?;
        position += 4 + length;
    }
    Ok(parameters)
}

fn take_parameter(parameters: &mut TransportParameters, parameter_id: u64, value: &[u8]) -> Result<(), Malformed> {
    if value.is_empty() {
        return Ok(());
    }
    if parameter_id == TP_ACK_DELAY_EXPONENT {
        parameters.ack_delay_exponent = varint(value, 0)?.0;
    } else if parameter_id == TP_MAX_ACK_DELAY {
        parameters.max_ack_delay_ms = varint(value, 0)?.0 as f64;
    } else if TP_MIN_ACK_DELAY.contains(&parameter_id) {
        parameters.min_ack_delay_us = Some(varint(value, 0)?.0);
    }
    Ok(())
}

/// What the decoder learns from one CRYPTO stream (`tls.HandshakeFacts`).
#[pyclass(module = "quicack_core", name = "HandshakeFacts")]
pub struct HandshakeFacts {
    #[pyo3(get)]
    client_random: Option<Py<PyBytes>>,
    #[pyo3(get)]
    cipher_suite: Option<u64>,
    #[pyo3(get)]
    transport_parameters: Option<Py<TransportParameters>>,
}

impl HandshakeFacts {
    fn parse_extensions(&mut self, py: Python<'_>, body: &[u8], position: usize, legacy: bool) -> Result<(), Malformed> {
        if position + 2 > body.len() {
            return Ok(());
        }
        let end = position + 2 + big_endian(&body[position..position + 2]) as usize;
        let mut position = position + 2;
        while position + 4 <= end {
            let extension_type = big_endian(slice(body, position, position + 2));
            let length = big_endian(slice(body, position + 2, position + 4)) as usize;
            if EXTENSION_QUIC_TRANSPORT_PARAMETERS.contains(&extension_type) {
                let value = slice(body, position + 4, position + 4 + length);
                let parameters =
                    if legacy { parse_legacy_transport_parameters(value)? } else { parse_transport_parameters(value)? };
                self.transport_parameters = Some(Py::new(py, parameters).expect("a new frozen object"));
            }
            position += 4 + length;
        }
        Ok(())
    }

    fn parse_message(&mut self, py: Python<'_>, message_type: u8, body: &[u8], legacy: bool) -> Result<(), Malformed> {
        match message_type {
            CLIENT_HELLO => {
                self.client_random = Some(PyBytes::new_bound(py, slice(body, 2, 34)).unbind());
                let mut position = 34;
                position += 1 + byte_at(body, position)?; // legacy session id
                position += 2 + big_endian(slice(body, position, position + 2)) as usize; // cipher suites
                position += 1 + byte_at(body, position)?; // compression methods
                self.parse_extensions(py, body, position, legacy)
            }
            SERVER_HELLO => {
                let mut position = 34;
                position += 1 + byte_at(body, position)?;
                self.cipher_suite = Some(big_endian(slice(body, position, position + 2)));
                self.parse_extensions(py, body, position + 3, legacy)
            }
            ENCRYPTED_EXTENSIONS => self.parse_extensions(py, body, 0, legacy),
            _ => Ok(()),
        }
    }
}

/// Reassembles one CRYPTO stream (one sender, one packet number space) to find where each TLS message starts.
#[pyclass(module = "quicack_core", name = "CryptoStream")]
pub struct CryptoStream {
    #[pyo3(get)]
    facts: Py<HandshakeFacts>,
    contiguous_end: u64,
    message_start: u64,
    buffer: Vec<u8>, // bytes from message_start to contiguous_end
    pending: BTreeMap<u64, Vec<u8>>, // out-of-order fragments by offset
    starts: Vec<(u64, u8)>,
    #[pyo3(get)]
    broken: bool,
    /// QUIC drafts up to -26 encode transport parameters with 16-bit ids and lengths (`tls.CryptoStream`'s twin)
    #[pyo3(get)]
    legacy_transport_parameters: bool,
}

impl CryptoStream {
    fn extend(&mut self, py: Python<'_>, data: &[u8]) {
        self.buffer.extend_from_slice(data);
        self.contiguous_end += data.len() as u64;
        // Complete messages are consumed from `consumed` on and cut off the buffer once, at the end.
        let mut consumed = 0;
        while self.buffer.len() - consumed >= 4 {
            let rest = &self.buffer[consumed..];
            let message_type = rest[0];
            let length = big_endian(&rest[1..4]) as usize;
            if self.starts.len() < MAX_MESSAGE_STARTS && self.starts.last().is_none_or(|last| last.0 != self.message_start) {
                self.starts.push((self.message_start, message_type));
            }
            if length > MAX_BUFFERED_BYTES {
                self.broken = true; // not TLS (wrong keys would not get here, but garbage might)
                break;
            }
            if rest.len() < 4 + length {
                break;
            }
            if matches!(message_type, CLIENT_HELLO | SERVER_HELLO | ENCRYPTED_EXTENSIONS) {
                // A malformed hello leaves the facts unknown (as far as it got); decryption then reports it.
                let legacy = self.legacy_transport_parameters;
                let _ = self.facts.borrow_mut(py).parse_message(py, message_type, &rest[4..4 + length], legacy);
            }
            consumed += 4 + length;
            self.message_start += (4 + length) as u64;
        }
        self.buffer.drain(..consumed);
        if self.buffer.is_empty() {
            // a whole certificate chain may have passed through: keep no capacity for the rest of the connection
            self.buffer = Vec::new();
        }
    }

    fn drain_pending(&mut self, py: Python<'_>) {
        while !self.pending.is_empty() {
            let mut progressed = false;
            let offsets: Vec<u64> = self.pending.keys().copied().collect();
            for offset in offsets {
                let length = self.pending[&offset].len() as u64;
                if offset + length <= self.contiguous_end {
                    self.pending.remove(&offset);
                    progressed = true;
                } else if offset <= self.contiguous_end {
                    let fragment = self.pending.remove(&offset).expect("listed");
                    let skip = (self.contiguous_end - offset) as usize;
                    self.extend(py, &fragment[skip..]);
                    progressed = true;
                }
            }
            if !progressed {
                return;
            }
        }
    }
}

#[pymethods]
impl CryptoStream {
    #[new]
    #[pyo3(signature = (legacy_transport_parameters=false))]
    fn new(py: Python<'_>, legacy_transport_parameters: bool) -> PyResult<Self> {
        let facts = Py::new(py, HandshakeFacts { client_random: None, cipher_suite: None, transport_parameters: None })?;
        Ok(CryptoStream {
            facts,
            contiguous_end: 0,
            message_start: 0,
            buffer: Vec::new(),
            pending: BTreeMap::new(),
            starts: Vec::new(),
            broken: false,
            legacy_transport_parameters,
        })
    }

    /// Add one CRYPTO frame; return the names of the messages starting inside it, or None.
    fn add(&mut self, py: Python<'_>, offset: u64, data: &[u8]) -> Option<Vec<String>> {
        let end = offset + data.len() as u64;
        if !self.broken {
            if offset <= self.contiguous_end && self.contiguous_end < end {
                let skip = (self.contiguous_end - offset) as usize;
                self.extend(py, &data[skip..]);
                self.drain_pending(py);
            } else if offset > self.contiguous_end && self.pending.len() < MAX_PENDING_FRAGMENTS {
                self.pending.insert(offset, data.to_vec());
            }
        }
        let names: Vec<String> = self
            .starts
            .iter()
            .filter(|(start, _)| offset <= *start && *start < end)
            .map(|(_, message_type)| message_name(*message_type))
            .collect();
        if names.is_empty() {
            None
        } else {
            Some(names)
        }
    }
}
