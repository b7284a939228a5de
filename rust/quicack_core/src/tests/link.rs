//! The plain link / IP / UDP cases the pcap lane reads itself; the rest goes to the Python reader (None).
//! Hand-made headers: each case is one header layout.

use super::*;

fn ipv4_udp(payload: &[u8], flags_fragment: u16) -> Vec<u8> {
    let total = 20 + 8 + payload.len();
    let mut out = vec![0x45, 0, (total >> 8) as u8, total as u8, 0, 0];
    out.extend(flags_fragment.to_be_bytes());
    out.extend([64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2]); // TTL, UDP, checksum, 198.18.0.1 -> 198.18.0.2
    out.extend([0x1f, 0x90, 0x11, 0x5c]); // ports 8080 -> 4444
    out.extend((8 + payload.len() as u16).to_be_bytes());
    out.extend([0, 0]);
    out.extend_from_slice(payload);
    out
}

#[test]
fn ethernet_and_raw_ipv4_udp() {
    let ip = ipv4_udp(b"quic", 0x4000); // don't fragment
    let mut ethernet = vec![0; 12];
    ethernet.extend([0x08, 0x00]);
    ethernet.extend(&ip);
    for (linktype, record) in [(LINKTYPE_ETHERNET, &ethernet), (LINKTYPE_RAW, &ip)] {
        let udp = plain_udp(linktype, record).expect("plain UDP");
        assert_eq!((udp.src, udp.dst), (&[198, 18, 0, 1][..], &[198, 18, 0, 2][..]));
        assert_eq!((udp.src_port, udp.dst_port, udp.ip_header_bytes, udp.udp_payload_bytes), (8080, 4444, 20, 4));
        assert_eq!(udp.payload, b"quic");
    }
}

#[test]
fn fragments_other_protocols_and_short_records_go_to_python() {
    assert!(plain_udp(LINKTYPE_RAW, &ipv4_udp(b"x", 0x2000)).is_none()); // more fragments
    let mut tcp = ipv4_udp(b"x", 0);
    tcp[9] = 6;
    assert!(plain_udp(LINKTYPE_RAW, &tcp).is_none());
    assert!(plain_udp(LINKTYPE_RAW, &ipv4_udp(b"x", 0)[..25]).is_none());
    let mut vlan = vec![0; 12];
    vlan.extend([0x81, 0x00]);
    assert!(plain_udp(LINKTYPE_ETHERNET, &vlan).is_none());
    assert!(plain_udp(147, &ipv4_udp(b"x", 0)).is_none()); // a link type the lane does not read
}

#[test]
fn ipv6_addresses_and_v4_keys_never_share_a_key() {
    let v4 = parse_address("198.18.0.1").unwrap();
    let v6 = parse_address("::198.18.0.1").unwrap();
    assert_ne!(v4, v6);
    assert_eq!(v4, address_key(&[198, 18, 0, 1]));
    assert!(parse_address("not an address").is_err());
}
