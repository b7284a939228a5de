//! Packet protection against the published test vectors: RFC 9001 Appendix A (Initial keys and header
//! protection of a client and a server Initial, a ChaCha20-Poly1305 short header packet, the key update secret)
//! and RFC 9000 Appendix A.3 (packet number recovery).

use super::*;
use crate::tests_support::hex;


// RFC 9001 A.1: the client's Destination Connection ID of all Initial examples.
const DCID: &str = "8394c8f03e515708";

// RFC 9001 A.3: the server's Initial, protected, and its payload (ACK + CRYPTO with the ServerHello).
const SERVER_INITIAL: &str = "cf000000010008f067a5502a4262b5004075c0d95a482cd0991cd25b0aac406a
    5816b6394100f37a1c69797554780bb38cc5a99f5ede4cf73c3ec2493a1839b3dbcba3f6ea46c5b7684df3548e7ddeb9
    c3bf9c73cc3f3bded74b562bfb19fb84022f8ef4cdd93795d77d06edbb7aaf2f58891850abbdca3d20398c276456cbc4
    2158407dd074ee";
pub const SERVER_INITIAL_PAYLOAD: &str = "02000000000600405a020000560303eefce7f7b37ba1d1632e96677825ddf739
    88cfc79825df566dc5430b9a045a1200130100002e00330024001d00209d3c940d89690b84d08a60993c144eca684d10
    81287c834d5311bcf32bb9da1a002b00020304";

// RFC 9001 A.5: a ChaCha20-Poly1305 short header packet (PING) and its traffic secret.
const CHACHA_SECRET: &str = "9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b";
const CHACHA_PACKET: &str = "4cfe4189655e5cd55c41f69080575d7999c25a5bfb";

#[test]
fn initial_keys_and_header_masks_are_those_of_rfc9001_appendix_a() {
    let (client, server) = PacketKeys::initial(&hex(DCID), VERSION_1).expect("version 1 has a key schedule");
    // A.1: the IVs; A.2 / A.3: the header protection masks of the samples given there.
    assert_eq!(client.current.iv.to_vec(), hex("fa044b2f42a3fd3b46fb255c"));
    assert_eq!(server.current.iv.to_vec(), hex("0ac1493ca1905853b0bba03e"));
    assert_eq!(client.mask.mask(&hex("d1b1c98dd7689fb8ec11d242b123dc9b")).to_vec(), hex("437b9aec36"));
    assert_eq!(server.mask.mask(&hex("2cd0991cd25b0aac406a5816b6394100")).to_vec(), hex("2ec0d8356a"));
}

#[test]
fn the_server_initial_of_rfc9001_a3_decrypts_to_its_payload() {
    let (_, mut server) = PacketKeys::initial(&hex(DCID), VERSION_1).expect("version 1 has a key schedule");
    let packet = hex(SERVER_INITIAL);
    // Long header: the packet number starts after 18 bytes (flags, version, CIDs, token length, length).
    let decrypted = server.decrypt_packet(&packet, 0, 18, packet.len(), 0, false).ok().expect("decrypts");
    assert_eq!(decrypted.packet_number, 1);
    assert_eq!(decrypted.header_bytes, 20); // a 2-byte packet number
    assert_eq!(decrypted.payload, hex(SERVER_INITIAL_PAYLOAD));
    assert!(server.used);
}

#[test]
fn a_damaged_packet_fails_and_leaves_the_keys_as_they_were() {
    let (_, mut server) = PacketKeys::initial(&hex(DCID), VERSION_1).expect("version 1 has a key schedule");
    let mut packet = hex(SERVER_INITIAL);
    let last = packet.len() - 1;
    packet[last] ^= 1; // the AEAD tag
    assert!(matches!(server.decrypt_packet(&packet, 0, 18, packet.len(), 0, false), Err(Failure::Aead)));
    // Too short to sample 16 bytes 4 bytes after the packet number offset.
    assert!(matches!(server.decrypt_packet(&packet[..30], 0, 18, 30, 0, false), Err(Failure::TooShort)));
    packet[last] ^= 1;
    let decrypted = server.decrypt_packet(&packet, 0, 18, packet.len(), 0, false).ok().expect("decrypts");
    assert_eq!(decrypted.packet_number, 1);
}

#[test]
fn the_chacha20_short_header_packet_of_rfc9001_a5_decrypts() {
    let mut keys = PacketKeys::from_secret(CHACHA20_POLY1305_SHA256, &hex(CHACHA_SECRET), VERSION_1).unwrap();
    assert_eq!(keys.current.iv.to_vec(), hex("e0459b3474bdd0e44a41c144"));
    let packet = hex(CHACHA_PACKET);
    // Short header with an empty Destination Connection ID: the packet number at offset 1, 3 bytes long.
    let decrypted = keys.decrypt_packet(&packet, 0, 1, packet.len(), 654_360_564, true).ok().expect("decrypts");
    assert_eq!(decrypted.packet_number, 654_360_564);
    assert_eq!(decrypted.header_bytes, 4);
    assert_eq!(decrypted.payload, vec![0x01]); // PING
    assert_eq!((decrypted.key_phase, keys.updates), (0, 0));
}

#[test]
fn the_next_key_phase_secret_is_that_of_rfc9001_a5() {
    let keys = PacketKeys::from_secret(CHACHA20_POLY1305_SHA256, &hex(CHACHA_SECRET), VERSION_1).unwrap();
    assert_eq!(
        keys.current.next_phase().secret,
        hex("1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9")
    );
}

#[test]
fn an_unknown_cipher_suite_is_refused() {
    assert!(Protection::from_secret(0x1304, &[0; 32], VERSION_1).is_err());
}

#[test]
fn packet_numbers_are_recovered_as_rfc9000_appendix_a3_shows() {
    // The example of A.3: largest 0xa82f30ea, truncated 0x9b32 in 16 bits.
    assert_eq!(decode_packet_number(0x9b32, 16, 0xa82f30ea + 1), 0xa82f9b32);
    // The candidate one window up, one window down, and kept where a window down would be negative.
    assert_eq!(decode_packet_number(0x01, 8, 0x1fe), 0x201);
    assert_eq!(decode_packet_number(0xff, 8, 0x105), 0xff);
    assert_eq!(decode_packet_number(0xff, 8, 0x01), 0xff);
    assert_eq!(decode_packet_number(0x00, 8, 0x100), 0x100);
    // Never beyond 2^62 - 1 (RFC 9000 §17.1).
    let top = (1i128 << 62) - 1;
    assert_eq!(decode_packet_number(0x00, 8, top), (1i128 << 62) - 0x100); // not 2^62, one window up
}

#[test]
fn the_key_schedule_follows_the_version() {
    // quicack.pcap.versions is the table; tests/test_pcap_versions.py compares every number of it with this twin.
    let draft_23 = schedule(0xFF00_0017).expect("draft-23");
    assert_eq!((draft_23.salt, draft_23.key_update), (&INITIAL_SALT_DRAFT_23, &b"traffic upd"[..]));
    let draft_29 = schedule(0xFF00_001D).expect("draft-29");
    assert_eq!((draft_29.salt, draft_29.key_update), (&INITIAL_SALT_DRAFT_29, &b"quic ku"[..]));
    assert_eq!(schedule(0xFF00_0022).expect("draft-34").salt, &INITIAL_SALT_V1);
    assert_eq!(schedule(VERSION_2).expect("v2").prefix, b"quicv2 ");
    assert!(schedule(0x1A2A_3A4A).is_none() && schedule(0xFF00_0023).is_none());
    assert!(PacketKeys::initial(&hex(DCID), 0x1A2A_3A4A).is_err());
}
