//! The frame walker on the RFC 9001 A.3 server Initial's payload and on hand-made payloads of each frame
//! layout (RFC 9000 §19, RFC 9221 DATAGRAM, draft-ietf-quic-ack-frequency), damaged ones included.

use super::*;
use crate::tests_support::hex;

fn names(rows: &FrameRows) -> Vec<&'static str> {
    rows.columns.frame_type.iter().map(|code| FRAME_NAMES[*code as usize]).collect()
}

fn walk(payload: &[u8]) -> (FrameRows, Walk) {
    let mut rows = FrameRows::default();
    let walk = rows.walk(payload);
    (rows, walk)
}

#[test]
fn the_rfc9001_a3_server_initial_payload_is_an_ack_and_a_crypto_frame() {
    let payload = hex(crate::keys::tests::SERVER_INITIAL_PAYLOAD);
    let (rows, walk) = walk(&payload);
    assert_eq!(names(&rows), ["ack", "crypto"]);
    assert_eq!(rows.columns.frame_bytes, [5, 94]); // every byte in one row: 5 + 1 + 1 + 2 + 90 = 99
    assert_eq!((rows.columns.largest_acked[0], rows.columns.first_ack_range[0], rows.columns.ack_delay_raw[0]), (Some(0), Some(0), Some(0)));
    assert_eq!(rows.ack_range_pairs, [(0, 0)]);
    assert_eq!((rows.columns.offset[1], rows.columns.length[1]), (Some(0), Some(90)));
    assert_eq!((walk.count, walk.ack_eliciting, walk.has_ack, walk.unknown.as_deref()), (2, true, true, None));
    let (row, offset, data) = &walk.crypto[0];
    assert_eq!((*row, *offset, data.len(), data[0]), (1, 0, 90, 0x02)); // a ServerHello
}

#[test]
fn ack_ranges_follow_the_gaps_of_rfc9000_section_19_3_1() {
    // ACK_ECN: largest 100, delay 10, one more range, first range 2, gap 1, length 3, ECN counts 5 0 1.
    let (rows, walk) = walk(&[0x03, 0x40, 0x64, 0x0a, 0x01, 0x02, 0x01, 0x03, 0x05, 0x00, 0x01]);
    assert_eq!(names(&rows), ["ack"]);
    // 98..=100, then the next range ends gap + 2 below 98: 92..=95
    assert_eq!(rows.ack_range_pairs, [(98, 100), (92, 95)]);
    assert_eq!(rows.ecn, [(0, [5, 0, 1])]);
    assert!(walk.has_ack && !walk.ack_eliciting);
    match rows.ack_ranges_column(true) {
        Column::Ranges(ends, valid, pairs) => {
            assert_eq!((ends, valid, pairs), (vec![2], vec![true], vec![(98, 100), (92, 95)]));
        }
        _ => panic!("ranges as lists"),
    }
}

#[test]
fn ack_ranges_beyond_64_bits_become_the_text_the_python_engine_writes() {
    // A corrupt ACK whose ranges run below -2^63: largest 0, two ranges of the largest varints.
    let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
    let mut payload = vec![0x02, 0x00, 0x00, 0x02, 0x00];
    for _ in 0..4 {
        payload.extend_from_slice(&max);
    }
    let (rows, _) = walk(&payload);
    assert_eq!(names(&rows), ["ack"]);
    match rows.ack_ranges_column(true) {
        Column::Text(texts) => {
            let text = texts[0].as_deref().unwrap();
            assert_eq!(text, "[[0,0],[-9223372036854775808,-4611686018427387905],[-18446744073709551616,-13835058055282163713]]");
        }
        _ => panic!("text for ranges beyond i64"),
    }
}

#[test]
fn padding_runs_are_one_row_and_an_unknown_type_ends_the_walk() {
    let (rows, walk) = walk(&[0x01, 0x00, 0x00, 0x00, 0x21, 0x01, 0x02]);
    assert_eq!(names(&rows), ["ping", "padding", "unknown"]);
    assert_eq!(rows.columns.frame_bytes, [1, 3, 3]);
    assert_eq!(walk.unknown.as_deref(), Some("unknown frame type 0x21"));
    assert!(walk.ack_eliciting);
}

#[test]
fn a_frame_running_past_the_payload_is_malformed() {
    // STREAM with a length of 9 and 2 bytes of data
    let (rows, walk) = walk(&[0x00, 0x0a, 0x04, 0x09, 0xaa, 0xbb]);
    assert_eq!(names(&rows), ["padding", "unknown"]);
    assert_eq!(rows.columns.frame_bytes, [1, 5]);
    assert_eq!(walk.unknown.as_deref(), Some("frame runs past the end of the packet (malformed)"));
}

#[test]
fn stream_frames_read_their_flags() {
    // OFF|LEN|FIN: stream 4, offset 16, 3 bytes; then without LEN: to the end of the payload
    let (rows, walk) = walk(&[0x0f, 0x04, 0x10, 0x03, 1, 2, 3, 0x08, 0x08, 9, 9, 9, 9]);
    assert_eq!(names(&rows), ["stream", "stream"]);
    assert_eq!((rows.columns.stream_id[0], rows.columns.offset[0], rows.columns.length[0], rows.columns.fin[0]), (Some(4), Some(16), Some(3), Some(true)));
    assert_eq!((rows.columns.stream_id[1], rows.columns.offset[1], rows.columns.length[1], rows.columns.fin[1]), (Some(8), Some(0), Some(4), Some(false)));
    assert_eq!(rows.columns.frame_bytes, [7, 6]);
    assert!(walk.ack_eliciting);
}

#[test]
fn extension_frames_have_the_names_of_the_data_contract() {
    let payload = [
        0x40, 0xaf, 0x01, 0x09, 0x80, 0x00, 0x61, 0xa8, 0x01, // ACK_FREQUENCY: seq 1, threshold 9, 25 ms, 1
        0x1f, // IMMEDIATE_ACK
        0x40, 0xac, // IMMEDIATE_ACK of draft -01 .. -04
        0x1e, // HANDSHAKE_DONE
        0x31, 0x02, 0xaa, 0xbb, // DATAGRAM with length
        0x30, 0xcc, // DATAGRAM to the end
    ];
    let (rows, walk) = walk(&payload);
    assert_eq!(names(&rows), ["ack_frequency", "immediate_ack", "immediate_ack", "handshake_done", "datagram", "datagram"]);
    assert_eq!(rows.ack_frequency, [(0, [1, 9, 25_000, 1])]);
    assert_eq!((rows.columns.length[4], rows.columns.length[5]), (Some(2), Some(1)));
    assert!(walk.ack_eliciting);
}

#[test]
fn new_connection_ids_and_close_frames() {
    let mut payload = vec![0x18, 0x01, 0x00, 0x04, 0xde, 0xad, 0xbe, 0xef];
    payload.extend_from_slice(&[0x11; 16]); // stateless reset token
    payload.extend_from_slice(&[0x1c, 0x00, 0x06, 0x02, b'n', b'o']); // CONNECTION_CLOSE: frame type, reason
    let (rows, walk) = walk(&payload);
    assert_eq!(names(&rows), ["new_connection_id", "connection_close"]);
    assert_eq!(walk.new_cids, [vec![0xde, 0xad, 0xbe, 0xef]]);
    assert_eq!(rows.columns.frame_bytes, [24, 6]);
    assert!(walk.ack_eliciting); // NEW_CONNECTION_ID is, CONNECTION_CLOSE is not
}

#[test]
fn truncating_the_rows_drops_their_ranges_and_asides() {
    let mut rows = FrameRows::default();
    rows.walk(&[0x02, 0x05, 0x00, 0x00, 0x01]);
    rows.walk(&[0x03, 0x09, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03]);
    assert_eq!(rows.ack_range_pairs, [(4, 5), (9, 9)]);
    rows.truncate(1);
    assert_eq!((rows.len(), rows.ack_range_pairs.clone(), rows.ecn.len()), (1, vec![(4, 5)], 0));
}
