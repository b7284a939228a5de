//! QUIC packet protection of one sender in one packet number space (RFC 9001 §5), with 1-RTT key phases (§6).
//! The same algorithm as `quicack.pcap.quic.PacketKeys`, which is the pure-Python version of this class.

use aes::cipher::{BlockEncrypt, KeyInit as BlockKeyInit, KeyIvInit, StreamCipher, StreamCipherSeek};
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM, AES_256_GCM, CHACHA20_POLY1305};
use std::cell::RefCell;
use hmac::{Hmac, Mac};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use sha2::{Sha256, Sha384};

const VERSION_1: u32 = 0x0000_0001;
const VERSION_2: u32 = 0x6B33_43CF;
const VERSION_2_PROVISIONAL: u32 = 0x709A_50C4;
// Initial salts: RFC 9001 §5.2 (also drafts -33, -34), RFC 9369 §3.3.1, draft-ietf-quic-v2-01, the drafts'
const INITIAL_SALT_V1: [u8; 20] = [
    0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a,
];
const INITIAL_SALT_V2: [u8; 20] = [
    0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93, 0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb, 0xf9, 0xbd, 0x2e, 0xd9,
];
const INITIAL_SALT_V2_PROVISIONAL: [u8; 20] = [
    0xa7, 0x07, 0xc2, 0x03, 0xa5, 0x9b, 0x47, 0x18, 0x4a, 0x1d, 0x62, 0xca, 0x57, 0x04, 0x06, 0xea, 0x7a, 0xe3, 0xe5, 0xd3,
];
const INITIAL_SALT_DRAFT_22: [u8; 20] = [
    0x7f, 0xbc, 0xdb, 0x0e, 0x7c, 0x66, 0xbb, 0xe9, 0x19, 0x3a, 0x96, 0xcd, 0x21, 0x51, 0x9e, 0xbd, 0x7a, 0x02, 0x64, 0x4a,
];
const INITIAL_SALT_DRAFT_23: [u8; 20] = [
    0xc3, 0xee, 0xf7, 0x12, 0xc7, 0x2e, 0xbb, 0x5a, 0x11, 0xa7, 0xd2, 0x43, 0x2b, 0xb4, 0x63, 0x65, 0xbe, 0xf9, 0xf5, 0x02,
];
const INITIAL_SALT_DRAFT_29: [u8; 20] = [
    0xaf, 0xbf, 0xec, 0x28, 0x99, 0x93, 0xd2, 0x4c, 0x9e, 0x97, 0x86, 0xf1, 0x9c, 0x61, 0x11, 0xe0, 0x43, 0x90, 0xa8, 0x99,
];

/// The key schedule of a QUIC version: its Initial salt, the prefix of the "key" / "iv" / "hp" labels and the key
/// update label. The twin of `quicack.pcap.versions` (tests/test_pcap_versions.py compares every number of that
/// table): the drafts up to -34 (before -22 as tshark 4.0 tries them) and mvfst's draft-based numbers as tshark 4.0
/// reads them, version 1, version 2 and its provisional number; None for any other version (not decrypted).
#[derive(Clone, Copy)]
struct Schedule {
    salt: &'static [u8; 20],
    prefix: &'static [u8],
    key_update: &'static [u8],
}

fn schedule(version: u32) -> Option<Schedule> {
    let draft = |number: u32, salt| {
        let key_update: &'static [u8] = if number <= 23 { b"traffic upd" } else { b"quic ku" };
        Some(Schedule { salt, prefix: b"quic ", key_update })
    };
    match version {
        VERSION_1 => Some(Schedule { salt: &INITIAL_SALT_V1, prefix: b"quic ", key_update: b"quic ku" }),
        VERSION_2 => Some(Schedule { salt: &INITIAL_SALT_V2, prefix: b"quicv2 ", key_update: b"quicv2 ku" }),
        VERSION_2_PROVISIONAL => {
            Some(Schedule { salt: &INITIAL_SALT_V2_PROVISIONAL, prefix: b"quicv2 ", key_update: b"quicv2 ku" })
        }
        0xFACE_B001 => draft(22, &INITIAL_SALT_DRAFT_22),
        0xFACE_B002 | 0xFACE_B00E => draft(27, &INITIAL_SALT_DRAFT_23),
        // before draft-22: tried with draft-22's keys, as tshark 4.0 does (versions.QuicVersion.tentative)
        0xFF00_0000..=0xFF00_0022 => {
            let number = version & 0xFF;
            let salt = match number {
                0..=22 => &INITIAL_SALT_DRAFT_22,
                23..=28 => &INITIAL_SALT_DRAFT_23,
                29..=32 => &INITIAL_SALT_DRAFT_29,
                _ => &INITIAL_SALT_V1,
            };
            draft(number, salt)
        }
        _ => None,
    }
}

fn unknown_version(version: u32) -> PyErr {
    PyValueError::new_err(format!("QUIC version 0x{version:08x}: no key schedule known"))
}
const AES_128_GCM_SHA256: u16 = 0x1301;
const AES_256_GCM_SHA384: u16 = 0x1302;
const CHACHA20_POLY1305_SHA256: u16 = 0x1303;
const SAMPLE_BYTES: usize = 16;

pub enum Failure {
    TooShort,
    Aead,
}

impl Failure {
    pub fn message(&self) -> &'static str {
        match self {
            Failure::TooShort => "packet too short to sample for header protection",
            Failure::Aead => "AEAD authentication failed",
        }
    }
}

/// HMAC keyed with a traffic secret. Keying hashes two blocks; a key derivation expands three labels from one
/// secret, so the keyed state is made once and cloned per label.
enum KeyedHmac {
    Sha256(Hmac<Sha256>),
    Sha384(Hmac<Sha384>),
}

impl KeyedHmac {
    fn new(sha384: bool, key: &[u8]) -> Self {
        if sha384 {
            KeyedHmac::Sha384(<Hmac<Sha384> as Mac>::new_from_slice(key).expect("any key size"))
        } else {
            KeyedHmac::Sha256(<Hmac<Sha256> as Mac>::new_from_slice(key).expect("any key size"))
        }
    }

    fn digest(&self, data: &[u8]) -> Vec<u8> {
        match self {
            KeyedHmac::Sha256(mac) => {
                let mut mac = mac.clone();
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
            KeyedHmac::Sha384(mac) => {
                let mut mac = mac.clone();
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
        }
    }

    /// TLS 1.3 HKDF-Expand-Label with an empty context, for outputs up to one hash long (RFC 8446 §7.1).
    fn expand_label(&self, label: &[u8], length: usize) -> Vec<u8> {
        let mut info = Vec::with_capacity(label.len() + 16);
        info.extend_from_slice(&(length as u16).to_be_bytes());
        info.push((6 + label.len()) as u8);
        info.extend_from_slice(b"tls13 ");
        info.extend_from_slice(label);
        info.push(0);
        info.push(1);
        let mut out = self.digest(&info);
        out.truncate(length);
        out
    }
}

enum HeaderMask {
    Aes128(Box<aes::Aes128>),
    Aes256(Box<aes::Aes256>),
    ChaCha([u8; 32]),
}

impl HeaderMask {
    fn mask(&self, sample: &[u8]) -> [u8; 5] {
        let mut out = [0u8; 5];
        match self {
            HeaderMask::Aes128(cipher) => {
                let mut block = aes::Block::clone_from_slice(sample);
                cipher.encrypt_block(&mut block);
                out.copy_from_slice(&block[..5]);
            }
            HeaderMask::Aes256(cipher) => {
                let mut block = aes::Block::clone_from_slice(sample);
                cipher.encrypt_block(&mut block);
                out.copy_from_slice(&block[..5]);
            }
            HeaderMask::ChaCha(key) => {
                // RFC 9001 §5.4.4: the sample is the block counter (4 bytes, little endian) and the nonce.
                let counter = u32::from_le_bytes([sample[0], sample[1], sample[2], sample[3]]);
                let mut cipher = chacha20::ChaCha20::new(key.into(), sample[4..16].into());
                cipher.seek(u64::from(counter) * 64);
                cipher.apply_keystream(&mut out);
            }
        }
        out
    }
}

struct Protection {
    cipher_suite: u16,
    secret: Vec<u8>,
    version: u32,
    // ring's AEADs (BoringSSL's assembly, CPU features detected at run time): AES-GCM with GHASH over several
    // blocks at once, 3-4x RustCrypto's aes-gcm (one block per GHASH step) on 1,200-byte packets, ChaCha20-Poly1305
    // 4-7x (bench/README.md, issue 37)
    aead: LessSafeKey,
    iv: [u8; 12],
}

impl Protection {
    fn from_secret(cipher_suite: u16, secret: &[u8], version: u32) -> Result<(Protection, HeaderMask), String> {
        let (sha384, key_bytes, chacha) = match cipher_suite {
            AES_128_GCM_SHA256 => (false, 16, false),
            AES_256_GCM_SHA384 => (true, 32, false),
            CHACHA20_POLY1305_SHA256 => (false, 32, true),
            _ => return Err(format!("unknown TLS cipher suite 0x{cipher_suite:04x}")),
        };
        let prefix = schedule(version).ok_or_else(|| format!("QUIC version 0x{version:08x}: no key schedule known"))?.prefix;
        let label = |name: &[u8]| [prefix, name].concat();
        let hkdf = KeyedHmac::new(sha384, secret);
        let key = hkdf.expand_label(&label(b"key"), key_bytes);
        let iv_bytes = hkdf.expand_label(&label(b"iv"), 12);
        let hp = hkdf.expand_label(&label(b"hp"), key_bytes);
        let algorithm = if chacha {
            &CHACHA20_POLY1305
        } else if key_bytes == 16 {
            &AES_128_GCM
        } else {
            &AES_256_GCM
        };
        let aead = LessSafeKey::new(UnboundKey::new(algorithm, &key).expect("the suite's key length"));
        let mask = if chacha {
            let mut chacha_key = [0u8; 32];
            chacha_key.copy_from_slice(&hp);
            HeaderMask::ChaCha(chacha_key)
        } else if key_bytes == 16 {
            HeaderMask::Aes128(Box::new(<aes::Aes128 as BlockKeyInit>::new_from_slice(&hp).expect("16 bytes")))
        } else {
            HeaderMask::Aes256(Box::new(<aes::Aes256 as BlockKeyInit>::new_from_slice(&hp).expect("32 bytes")))
        };
        let mut iv = [0u8; 12];
        iv.copy_from_slice(&iv_bytes);
        Ok((Protection { cipher_suite, secret: secret.to_vec(), version, aead, iv }, mask))
    }

    fn next_phase(&self) -> Protection {
        let sha384 = self.cipher_suite == AES_256_GCM_SHA384;
        // "traffic upd" up to draft-23; a Protection exists only for a version with a schedule
        let label = schedule(self.version).expect("made from a version with a schedule").key_update;
        let secret = KeyedHmac::new(sha384, &self.secret).expand_label(label, self.secret.len());
        Protection::from_secret(self.cipher_suite, &secret, self.version).expect("known suite").0
    }

    fn open(&self, ciphertext: &[u8], header: &[u8], packet_number: u64) -> Result<Vec<u8>, Failure> {
        let mut nonce = self.iv;
        for (index, byte) in packet_number.to_be_bytes().iter().enumerate() {
            nonce[4 + index] ^= byte;
        }
        // Decrypted in a buffer a caller gave back (`recycle`): a fresh one per packet cost a malloc and a free
        // of ~1.2 KB, which glibc serves from its slow bins (~5 % of the CPU time of a large capture).
        let mut buffer = SPARE_BUFFERS.with(|spare| spare.borrow_mut().pop()).unwrap_or_default();
        buffer.clear();
        buffer.extend_from_slice(ciphertext);
        // the packet number makes each nonce unique per key, as RFC 9001 §5.3 has it (only opened here)
        let opened = self.aead.open_in_place(Nonce::assume_unique_for_key(nonce), Aad::from(header), &mut buffer);
        match opened.map(|plaintext| plaintext.len()) {
            Ok(length) => {
                buffer.truncate(length); // the tag after the plaintext
                Ok(buffer)
            }
            Err(_) => {
                recycle(buffer);
                Err(Failure::Aead)
            }
        }
    }
}

const MAX_SPARE_BUFFERS: usize = 8;

thread_local! {
    static SPARE_BUFFERS: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Give a decrypted payload's buffer back for the next packet (its contents are forgotten).
pub fn recycle(buffer: Vec<u8>) {
    SPARE_BUFFERS.with(|spare| {
        let mut spare = spare.borrow_mut();
        if spare.len() < MAX_SPARE_BUFFERS {
            spare.push(buffer);
        }
    });
}

/// The full packet number from its truncated form (RFC 9000 Appendix A.3), as `quic.decode_packet_number`.
fn decode_packet_number(truncated: i128, num_bits: u32, expected: i128) -> i128 {
    let window: i128 = 1 << num_bits;
    let half_window = window / 2;
    let candidate = (expected & !(window - 1)) | truncated;
    if candidate <= expected - half_window && candidate < (1i128 << 62) - window {
        return candidate + window;
    }
    if candidate > expected + half_window && candidate >= window {
        return candidate - window;
    }
    candidate
}

pub struct Decrypted {
    pub header_bytes: usize,
    pub packet_number: i64,
    pub payload: Vec<u8>,
    pub key_phase: u8,
}

#[pyclass(module = "quicack_core", name = "DecryptedPacket", frozen)]
pub struct DecryptedPacket {
    #[pyo3(get)]
    header_bytes: usize,
    #[pyo3(get)]
    packet_number: i64,
    #[pyo3(get)]
    payload: Py<PyBytes>,
    #[pyo3(get)]
    key_phase: u8,
}

#[pyclass(module = "quicack_core", name = "PacketKeys")]
pub struct PacketKeys {
    current: Protection,
    mask: HeaderMask,
    // boxed: most keys never change phase, and a Protection inline is ~0.6 KB (a scan holds ~8 keys for each of
    // thousands of connections at a time)
    next: Option<Box<Protection>>,
    previous: Option<Box<Protection>>,
    #[pyo3(get)]
    key_phase: u8,
    #[pyo3(get)]
    updates: u32,
    /// Whether a packet was tried with these keys (by the Python decoder or the lane): the decoder makes
    /// 1-RTT keys ahead of their first packet and remakes them while this is false (decode._prepare_1rtt_keys).
    #[pyo3(get)]
    used: bool,
}

impl PacketKeys {
    /// Remove header protection and decrypt data[start:packet_end]; on failure nothing changes.
    pub fn decrypt_packet(
        &mut self,
        data: &[u8],
        start: usize,
        pn_offset: usize,
        packet_end: usize,
        expected_pn: i64,
        short: bool,
    ) -> Result<Decrypted, Failure> {
        self.used = true;
        let header_end_max = start + pn_offset + 4;
        if header_end_max + SAMPLE_BYTES > packet_end.min(data.len()) {
            return Err(Failure::TooShort);
        }
        let pn_start = start + pn_offset;
        let mask = self.mask.mask(&data[header_end_max..header_end_max + SAMPLE_BYTES]);
        let first = data[start] ^ (mask[0] & if short { 0x1F } else { 0x0F });
        let pn_length = usize::from(first & 0x03) + 1;
        let pn_end = pn_start + pn_length;
        let mut header = Vec::with_capacity(pn_end - start);
        header.push(first);
        header.extend_from_slice(&data[start + 1..pn_start]);
        let mut truncated: i128 = 0;
        for index in 0..pn_length {
            let byte = data[pn_start + index] ^ mask[1 + index];
            header.push(byte);
            truncated = (truncated << 8) | i128::from(byte);
        }
        let packet_number = decode_packet_number(truncated, (pn_length * 8) as u32, i128::from(expected_pn)) as i64;
        let header_bytes = pn_offset + pn_length;
        let ciphertext = &data[pn_end.min(data.len())..packet_end.min(data.len())];
        if short {
            let key_phase = (first >> 2) & 1;
            if key_phase != self.key_phase {
                return self.decrypt_other_phase(ciphertext, &header, packet_number, header_bytes, key_phase);
            }
        }
        let payload = self.current.open(ciphertext, &header, packet_number as u64)?;
        Ok(Decrypted { header_bytes, packet_number, payload, key_phase: self.key_phase })
    }

    fn decrypt_other_phase(
        &mut self,
        ciphertext: &[u8],
        header: &[u8],
        packet_number: i64,
        header_bytes: usize,
        key_phase: u8,
    ) -> Result<Decrypted, Failure> {
        // A reordered packet from before the last update, or the first packet after a new one.
        if let Some(previous) = &self.previous {
            if let Ok(payload) = previous.open(ciphertext, header, packet_number as u64) {
                return Ok(Decrypted { header_bytes, packet_number, payload, key_phase });
            }
        }
        if self.next.is_none() {
            self.next = Some(Box::new(self.current.next_phase()));
        }
        let payload = self.next.as_ref().expect("just made").open(ciphertext, header, packet_number as u64)?;
        let next = self.next.take().expect("just used");
        self.previous = Some(Box::new(std::mem::replace(&mut self.current, *next)));
        self.key_phase = key_phase;
        self.updates += 1;
        Ok(Decrypted { header_bytes, packet_number, payload, key_phase })
    }
}

/// The Initial keys (client→server, server→client) of `PacketKeys.initial`, or None for a version without a
/// key schedule.
pub fn initial_keys(dcid: &[u8], version: u32) -> Option<(PacketKeys, PacketKeys)> {
    let salt = schedule(version)?.salt;
    let initial_secret = KeyedHmac::new(false, salt).digest(dcid); // HKDF-Extract
    let hkdf = KeyedHmac::new(false, &initial_secret);
    let keys = |label: &[u8]| {
        let (current, mask) = Protection::from_secret(AES_128_GCM_SHA256, &hkdf.expand_label(label, 32), version)
            .expect("a known suite and version");
        PacketKeys { current, mask, next: None, previous: None, key_phase: 0, updates: 0, used: false }
    };
    Some((keys(b"client in"), keys(b"server in")))
}

/// Whether packets of `version` are read (it has a key schedule: `versions.QuicVersion.supported`).
pub fn supported_version(version: u32) -> bool {
    schedule(version).is_some()
}

#[pymethods]
impl PacketKeys {
    /// Keys from a traffic secret (RFC 9001 §5.1; RFC 9369 §3.3.2 labels; the version's, `schedule`); ValueError on
    /// an unknown suite or a version without a key schedule.
    #[staticmethod]
    fn from_secret(cipher_suite: u16, secret: &[u8], version: u32) -> PyResult<PacketKeys> {
        let (current, mask) = Protection::from_secret(cipher_suite, secret, version).map_err(PyValueError::new_err)?;
        Ok(PacketKeys { current, mask, next: None, previous: None, key_phase: 0, updates: 0, used: false })
    }

    /// The Initial keys (client→server, server→client) from the client's Destination Connection ID (RFC 9001
    /// §5.2, RFC 9369 §3.3.1) with the version's salt, as `quic.initial_keys`; ValueError for a version without one.
    #[staticmethod]
    fn initial(dcid: &[u8], version: u32) -> PyResult<(PacketKeys, PacketKeys)> {
        initial_keys(dcid, version).ok_or_else(|| unknown_version(version))
    }

    /// The key schedule this core knows for `version`: (Initial salt, label prefix, key update label), or None.
    /// For the test that it is the same as `quicack.pcap.versions`' (the one table of versions).
    #[staticmethod]
    fn schedule(py: Python<'_>, version: u32) -> Option<(Py<PyBytes>, Py<PyBytes>, Py<PyBytes>)> {
        schedule(version).map(|s| {
            (
                PyBytes::new_bound(py, s.salt).unbind(),
                PyBytes::new_bound(py, s.prefix).unbind(),
                PyBytes::new_bound(py, s.key_update).unbind(),
            )
        })
    }

    /// As `quic.PacketKeys.decrypt`: raises ValueError when the packet does not decrypt.
    #[pyo3(signature = (data, start, pn_offset, packet_end, expected_pn, short))]
    #[allow(clippy::too_many_arguments)]
    fn decrypt(
        &mut self,
        py: Python<'_>,
        data: &[u8],
        start: usize,
        pn_offset: usize,
        packet_end: usize,
        expected_pn: i64,
        short: bool,
    ) -> PyResult<DecryptedPacket> {
        match self.decrypt_packet(data, start, pn_offset, packet_end, expected_pn, short) {
            Ok(packet) => Ok(DecryptedPacket {
                header_bytes: packet.header_bytes,
                packet_number: packet.packet_number,
                payload: PyBytes::new_bound(py, &packet.payload).unbind(),
                key_phase: packet.key_phase,
            }),
            Err(failure) => Err(PyValueError::new_err(failure.message())),
        }
    }
}

#[cfg(test)]
#[path = "tests/keys.rs"]
pub mod tests;
