//! QUIC frame-type names and numbers, compiled in from their one home, src/quicack/frame_types.csv: build.rs
//! turns it into `FRAME_NAMES` (a frame's code is its row), an `F_<NAME>` code per row, `FRAME_TYPES` (the rows,
//! exposed to Python as `quicack_core.FRAME_TYPES`), `wire_frame_code` (the capture decoder's numbers) and
//! `qlog_frame_code` (the qlog writers' spellings). `quicack.frame_types` reads the same file in Python.
// Generated code: a constant per row, used or not, and every number of a range listed.
#![allow(dead_code, clippy::manual_range_patterns)]

include!(concat!(env!("OUT_DIR"), "/frame_types.rs"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_contract_names_of_the_extension_frames() {
        let name = |number| wire_frame_code(number).map(|code| FRAME_NAMES[code as usize]);
        assert_eq!(name(0x1e), Some("handshake_done"));
        assert_eq!((name(0x1f), name(0xac)), (Some("immediate_ack"), Some("immediate_ack")));
        assert_eq!(name(0xaf), Some("ack_frequency"));
        assert_eq!((name(0x30), name(0x31)), (Some("datagram"), Some("datagram")));
        assert_eq!((name(0x08), name(0x0f), name(0x03)), (Some("stream"), Some("stream"), Some("ack")));
        assert_eq!((name(0x20), name(0x40)), (None, None));
    }

    #[test]
    fn qlog_spellings_map_to_their_names() {
        let name = |spelling| qlog_frame_code(spelling).map(|code| FRAME_NAMES[code as usize]);
        assert_eq!(name("ack_ecn"), Some("ack"));
        assert_eq!(name("max_streams_bidi"), Some("max_streams"));
        assert_eq!(name("time_stamp"), Some("time_stamp"));
        assert_eq!(name("ACK"), None); // callers lowercase first
        assert_eq!(FRAME_NAMES[F_UNKNOWN as usize], "unknown");
    }
}
