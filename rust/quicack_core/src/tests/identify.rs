//! The identify pass's header and ClientHello reading on hand-made bytes: each check of `quic.parse_long_header`
//! that decides whether a datagram starts a connection, and `identify.client_hello_sni` on well-formed, cut and
//! odd ClientHello bodies. Hand-made: the malformed cases cannot be recorded; tests/test_scan_identify_core.py
//! compares the whole pass with the Python one on recorded scan captures.

use super::*;

/// A long header: first byte, version, DCID, SCID, then `rest` (token length, Length, ...), padded to `size`.
fn long(first: u8, version: u32, dcid: &[u8], scid: &[u8], rest: &[u8], size: usize) -> Vec<u8> {
    let mut out = vec![first];
    out.extend(version.to_be_bytes());
    out.push(dcid.len() as u8);
    out.extend(dcid);
    out.push(scid.len() as u8);
    out.extend(scid);
    out.extend(rest);
    out.resize(size.max(out.len()), 0);
    out
}

#[test]
fn a_version_1_initial_gives_its_connection_ids_and_packet_size() {
    // token length 0, Length 0x4010 - 0x4000 = 16 (two-byte varint)
    let data = long(0xC0, 1, &[1, 2, 3, 4, 5, 6, 7, 8], &[9, 9, 9, 9], &[0x00, 0x40, 0x10], 40);
    let header = parse_long_header(&data, 0, None).unwrap();
    assert_eq!(header.packet_type, LongType::Initial);
    assert_eq!(&data[header.dcid.0..header.dcid.1], &[1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(&data[header.scid.0..header.scid.1], &[9, 9, 9, 9]);
    assert_eq!(header.pn_offset, 1 + 4 + 1 + 8 + 1 + 4 + 1 + 2);
    assert_eq!(header.packet_bytes, header.pn_offset + 16);
}

#[test]
fn version_2_has_its_own_type_bits() {
    let initial = long(0xD0, VERSION_2, &[1; 8], &[2; 8], &[0x00, 0x05], 40);
    assert_eq!(parse_long_header(&initial, 0, None).unwrap().packet_type, LongType::Initial);
    let retry = long(0xC0, VERSION_2, &[1; 8], &[2; 8], &[], 40);
    assert_eq!(parse_long_header(&retry, 0, None).unwrap().packet_type, LongType::Retry);
    let handshake = long(0xE0, 1, &[1; 8], &[2; 8], &[0x05], 40);
    assert_eq!(parse_long_header(&handshake, 0, None).unwrap().packet_type, LongType::Handshake);
}

#[test]
fn what_parse_long_header_refuses_starts_no_connection() {
    // shorter than the fixed fields
    assert!(parse_long_header(&[0xC0, 0, 0, 0, 1, 0], 0, None).is_none());
    // a 21-byte DCID in a version read
    assert!(parse_long_header(&long(0xC0, 1, &[1; 21], &[], &[0, 1], 60), 0, None).is_none());
    // an unknown or reserved version
    assert!(parse_long_header(&long(0xC0, 0x1A2A_3A4A, &[1; 8], &[], &[0, 1], 40), 0, None).is_none());
    assert!(parse_long_header(&long(0xC0, 0xFF00_0023, &[1; 8], &[], &[0, 1], 40), 0, None).is_none());
    // the Length runs past the datagram on the wire (and past its bytes without a wire size)
    let data = long(0xC0, 1, &[1; 8], &[], &[0x00, 0x40, 0x40], 40);
    assert!(parse_long_header(&data, 0, None).is_none());
    assert!(parse_long_header(&data, 0, Some(50)).is_none());
    assert!(parse_long_header(&data, 0, Some(100)).is_some()); // cut by the snap length: its true size is kept
    // the connection IDs run past the datagram
    let mut cut = long(0xC0, 1, &[1; 8], &[], &[], 0);
    cut.truncate(10);
    assert!(parse_long_header(&cut, 0, None).is_none());
    // a draft before -22 with a 21-byte SCID (draft-22's layout, at most 20 bytes, as tshark tries it)
    assert!(parse_long_header(&long(0xC0, 0xFF00_0012, &[1; 8], &[2; 21], &[0, 1], 60), 0, None).is_none());
    assert!(parse_long_header(&long(0xC0, 0xFF00_0012, &[1; 8], &[2; 8], &[0, 1], 60), 0, None).is_some());
}

#[test]
fn version_negotiation_is_recognised_whatever_its_connection_ids() {
    let data = long(0x80, 0, &[1; 30], &[2; 8], &[0, 0, 0, 1], 0);
    let header = parse_long_header(&data, 0, None).unwrap();
    assert_eq!(header.packet_type, LongType::VersionNegotiation);
    assert_eq!(header.packet_bytes, data.len());
}

/// A ClientHello body (after the 4-byte message header) whose extensions are `extensions`.
fn client_hello(extensions: &[u8]) -> Vec<u8> {
    let mut body = vec![3, 3];
    body.extend([7u8; 32]); // random
    body.push(0); // session id
    body.extend([0, 2, 0x13, 0x01]); // one cipher suite
    body.extend([1, 0]); // compression
    body.extend((extensions.len() as u16).to_be_bytes());
    body.extend(extensions);
    body
}

fn server_name(name: &[u8]) -> Vec<u8> {
    let mut list = vec![0u8]; // host_name
    list.extend((name.len() as u16).to_be_bytes());
    list.extend(name);
    let mut extension = vec![0, 0];
    extension.extend(((list.len() + 2) as u16).to_be_bytes());
    extension.extend((list.len() as u16).to_be_bytes());
    extension.extend(list);
    extension
}

#[test]
fn the_sni_of_a_hand_made_client_hello() {
    let mut extensions = vec![0x00, 0x2B, 0x00, 0x03, 0x02, 0x03, 0x04]; // supported_versions first
    extensions.extend(server_name(b"example.com"));
    assert_eq!(client_hello_sni(&client_hello(&extensions)).as_deref(), Some("example.com"));
    // bytes beyond ASCII are replaced, as bytes.decode("ascii", errors="replace") does
    assert_eq!(client_hello_sni(&client_hello(&server_name(b"a\xffb"))).as_deref(), Some("a\u{FFFD}b"));
    // no server_name extension
    assert_eq!(client_hello_sni(&client_hello(&[0x00, 0x2B, 0x00, 0x00])), None);
    // cut inside the session id length: IndexError in Python, None
    assert_eq!(client_hello_sni(&client_hello(&server_name(b"x"))[..30]), None);
    // cut inside the name: the name as far as it goes (Python slices clamp)
    let whole = client_hello(&server_name(b"example.com"));
    assert_eq!(client_hello_sni(&whole[..whole.len() - 4]).as_deref(), Some("example"));
}

#[test]
fn rows_are_matched_within_the_window_and_wait_for_it_to_fill() {
    let mut identifier = ScanIdentifier::default();
    for index in 0..70 {
        identifier.owners.push_back((index, 100, index + 1));
    }
    // 70 read: the first 7 rows are matched with a full window, then it waits for more datagrams
    let found = identifier.match_rows((0..10).collect(), vec![100; 10], 0, false);
    assert_eq!(found, (1..=7).map(Some).collect::<Vec<_>>());
    for index in 70..80 {
        identifier.owners.push_back((index, 100, index + 1));
    }
    // a row whose datagram is 64 or more ahead is not matched and consumes nothing
    let found = identifier.match_rows(vec![75, 7], vec![100, 100], 0, false);
    assert_eq!(found, vec![None, Some(8)]);
    assert_eq!(identifier.unmatched, 1);
    // a match skips the datagrams before it (ones the decoder skipped)
    let found = identifier.match_rows(vec![20, 21], vec![100, 100], 0, true);
    assert_eq!(found, vec![Some(21), Some(22)]);
    assert_eq!(identifier.owners.front(), Some(&(22, 100, 23)));
    // once the capture is read, the last rows are matched against what is left
    let found = identifier.match_rows(vec![79, 79], vec![100, 100], 0, true);
    assert_eq!(found, vec![Some(80), None]);
}
