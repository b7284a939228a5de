//! quicack_core: the compiled core of quicack's capture decoder (`quicack.pcap`).
//!
//! `PacketKeys` (QUIC packet protection), `RowBuffers` (row buffers and the frame walker), `PacketNumbers`
//! (largest packet number per direction and space), `CryptoStream` (the TLS messages of a CRYPTO stream) and
//! `PcapLane` (a pcap reader that decodes the short header packets of registered flows by itself), `QlogLane`
//! (a JSON-SEQ / NDJSON qlog reader that normalizes the common events by itself, twin of `quicack.qlog.reader`). Each has a pure-Python twin in `quicack.pcap` that writes
//! the same rows; `quicack.pcap.decode` picks this one when it is installed.

// pyo3 0.22's #[pymethods] expansion converts each PyResult's error into PyErr again, which clippy (1.8x and
// later) reports at every method returning PyResult; the code written here has no such conversion.
#![allow(clippy::useless_conversion)]

mod arrow;
mod contract;
#[macro_use]
mod row_columns;
mod engine;
mod frame_types;
mod identify;
#[doc(hidden)]
pub mod json; // public for benches/json_parse.rs
mod keys;
mod link;
mod parquet_out;
mod qlog;
mod rows;
mod tcp;
mod tls;

#[cfg(test)]
mod tests_support {
    /// Bytes from hex digits (whitespace between them ignored).
    pub fn hex(text: &str) -> Vec<u8> {
        let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits.chunks(2).map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap()).collect()
    }
}

use pyo3::prelude::*;

/// Largest packet number seen per direction (c2s, s2c) and packet number space (initial, handshake, appdata).
#[pyclass(module = "quicack_core", name = "PacketNumbers")]
pub struct PacketNumbers {
    largest: [[i64; 3]; 2],
}

impl PacketNumbers {
    pub fn get(&self, direction: u8, space: u8) -> i64 {
        self.largest[direction as usize][space as usize]
    }

    pub fn set(&mut self, direction: u8, space: u8, value: i64) {
        self.largest[direction as usize][space as usize] = value;
    }
}

#[pymethods]
impl PacketNumbers {
    #[new]
    fn new() -> Self {
        PacketNumbers { largest: [[-1; 3]; 2] }
    }

    /// The largest packet number of (direction, space), -1 before the first.
    fn largest(&self, direction: &str, space: &str) -> PyResult<i64> {
        Ok(self.get(rows::code_of(&rows::DIRECTIONS, direction)?, rows::code_of(&rows::PN_SPACES, space)?))
    }

    fn update(&mut self, direction: &str, space: &str, packet_number: i64) -> PyResult<()> {
        let (direction, space) = (rows::code_of(&rows::DIRECTIONS, direction)?, rows::code_of(&rows::PN_SPACES, space)?);
        if packet_number > self.get(direction, space) {
            self.set(direction, space, packet_number);
        }
        Ok(())
    }
}

/// This build: "<version>+<16 hex digits of a hash of the sources it was built from>" (build_identity.rs).
/// `quicack.compiled_core` compares it with the checkout's sources; the workflow re-runs the jobs that use the core
/// when it changes.
#[pyfunction]
fn build_identity() -> &'static str {
    env!("QUICACK_CORE_BUILD_IDENTITY")
}

#[pymodule]
fn quicack_core(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<keys::PacketKeys>()?;
    module.add_class::<keys::DecryptedPacket>()?;
    module.add_class::<rows::RowBuffers>()?;
    module.add_class::<PacketNumbers>()?;
    module.add_class::<engine::PcapLane>()?;
    module.add_class::<tcp::TcpRows>()?;
    module.add_class::<identify::ScanIdentifier>()?;
    module.add_class::<arrow::ArrowTable>()?;
    module.add_class::<qlog::QlogLane>()?;
    module.add_class::<parquet_out::ParquetFileWriter>()?;
    module.add_class::<tls::CryptoStream>()?;
    module.add_class::<tls::HandshakeFacts>()?;
    module.add_class::<tls::TransportParameters>()?;
    // The frame-type table compiled in (from src/quicack/frame_types.csv): [(name, wire types, qlog names)]
    module.add("FRAME_TYPES", frame_types::FRAME_TYPES.iter().map(|(n, w, q)| (*n, w.to_vec(), q.to_vec())).collect::<Vec<_>>())?;
    module.add_function(wrap_pyfunction!(qlog::plausibility_packets, module)?)?;
    module.add_function(wrap_pyfunction!(qlog::plausibility_frames, module)?)?;
    module.add_function(wrap_pyfunction!(qlog::plausibility_metrics, module)?)?;
    module.add_function(wrap_pyfunction!(build_identity, module)?)?;
    module.add("__build_identity__", build_identity())?;
    Ok(())
}
