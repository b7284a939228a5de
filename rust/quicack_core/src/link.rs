//! Link, IP and UDP headers of a capture record as the pcap lane reads them: the plain cases only (anything
//! else goes back to the Python reader, `quicack.pcap.reader`, which handles and reports it).

use std::net::IpAddr;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

pub const LINKTYPE_ETHERNET: u32 = 1;
pub const LINKTYPE_RAW: u32 = 101;
pub const LINKTYPE_RAW_OPENBSD: u32 = 12;
pub const LINKTYPE_IPV4: u32 = 228;
pub const LINKTYPE_IPV6: u32 = 229;
pub const LINKTYPE_LINUX_SLL: u32 = 113;
pub const LINKTYPE_LINUX_SLL2: u32 = 276;
pub const LINKTYPE_PPP: u32 = 9;
pub const LINKTYPE_PPP_HDLC: u32 = 50;

pub struct Udp<'a> {
    pub src: &'a [u8],
    pub dst: &'a [u8],
    pub src_port: u16,
    pub dst_port: u16,
    pub ip_header_bytes: usize,
    pub udp_payload_bytes: usize,
    pub payload: &'a [u8],
}

pub fn address_key(address: &[u8]) -> [u8; 16] {
    let mut key = [0u8; 16];
    if address.len() == 4 {
        // IPv4-mapped form, so that a v4 and a v6 address never share a key.
        key[10] = 0xFF;
        key[11] = 0xFF;
        key[12..].copy_from_slice(address);
    } else {
        key.copy_from_slice(address);
    }
    key
}

pub fn parse_address(text: &str) -> PyResult<[u8; 16]> {
    match text.parse::<IpAddr>().map_err(|error| PyValueError::new_err(error.to_string()))? {
        IpAddr::V4(address) => Ok(address_key(&address.octets())),
        IpAddr::V6(address) => Ok(address_key(&address.octets())),
    }
}

/// Link, IP and UDP headers of the plain cases; None sends the record to the Python reader (which handles,
/// and reports, everything else: VLANs, fragments, extension headers, short or inconsistent headers, other
/// link types, non-UDP packets).
pub fn plain_udp(linktype: u32, data: &[u8]) -> Option<Udp<'_>> {
    let (ipv4, offset) = plain_ip(linktype, data)?;
    let (src, dst, ip_header_bytes, ip_payload_length) = if ipv4 {
        if data.len() < offset + 20 || data[offset + 9] != 17 {
            return None;
        }
        let flags_fragment = (u16::from(data[offset + 6]) << 8) | u16::from(data[offset + 7]);
        if flags_fragment & 0x3FFF != 0 {
            return None;
        }
        let ihl = usize::from(data[offset] & 0x0F) * 4;
        let total_length = (usize::from(data[offset + 2]) << 8) | usize::from(data[offset + 3]);
        (&data[offset + 12..offset + 16], &data[offset + 16..offset + 20], ihl, total_length as i64 - ihl as i64)
    } else {
        if data.len() < offset + 40 || data[offset + 6] != 17 {
            return None;
        }
        let payload_length = (usize::from(data[offset + 4]) << 8) | usize::from(data[offset + 5]);
        (&data[offset + 8..offset + 24], &data[offset + 24..offset + 40], 40, payload_length as i64)
    };
    let udp = offset + ip_header_bytes;
    if data.len() < udp + 8 {
        return None;
    }
    let udp_length = (usize::from(data[udp + 4]) << 8) | usize::from(data[udp + 5]);
    if udp_length < 8 || udp_length as i64 > ip_payload_length {
        return None;
    }
    let start = udp + 8;
    let length = udp_length - 8;
    Some(Udp {
        src,
        dst,
        src_port: (u16::from(data[udp]) << 8) | u16::from(data[udp + 1]),
        dst_port: (u16::from(data[udp + 2]) << 8) | u16::from(data[udp + 3]),
        ip_header_bytes,
        udp_payload_bytes: length,
        payload: &data[start.min(data.len())..(start + length).min(data.len())],
    })
}

/// The IP layer of a TCP segment, its sizes as `capture_file.link_to_udp` hands them to `tcp.tcp_segment`.
pub struct TcpIp<'a> {
    pub src: &'a [u8],
    pub dst: &'a [u8],
    pub ip_header_bytes: usize,
    pub ip_bytes: usize, // on the wire
    pub tcp_at: usize,   // where the TCP header starts in the record
}

/// An IP packet carrying TCP, of the plain cases as `plain_udp` (IPv4 not a fragment, IPv6 without extension
/// headers); None for anything else.
pub fn plain_tcp_ip(linktype: u32, data: &[u8]) -> Option<TcpIp<'_>> {
    let (ipv4, offset) = plain_ip(linktype, data)?;
    if ipv4 {
        if data.len() < offset + 20 || data[offset + 9] != 6 {
            return None;
        }
        let flags_fragment = (u16::from(data[offset + 6]) << 8) | u16::from(data[offset + 7]);
        if flags_fragment & 0x3FFF != 0 {
            return None;
        }
        let ihl = usize::from(data[offset] & 0x0F) * 4;
        let total_length = (usize::from(data[offset + 2]) << 8) | usize::from(data[offset + 3]);
        Some(TcpIp {
            src: &data[offset + 12..offset + 16],
            dst: &data[offset + 16..offset + 20],
            ip_header_bytes: ihl,
            ip_bytes: total_length,
            tcp_at: offset + ihl,
        })
    } else {
        if data.len() < offset + 40 || data[offset + 6] != 6 {
            return None;
        }
        let payload_length = (usize::from(data[offset + 4]) << 8) | usize::from(data[offset + 5]);
        Some(TcpIp {
            src: &data[offset + 8..offset + 24],
            dst: &data[offset + 24..offset + 40],
            ip_header_bytes: 40,
            ip_bytes: 40 + payload_length,
            tcp_at: offset + 40,
        })
    }
}

/// (IPv4, where the IP header starts) of a record of the plain link layers; None for anything else.
fn plain_ip(linktype: u32, data: &[u8]) -> Option<(bool, usize)> {
    Some(match linktype {
        LINKTYPE_ETHERNET if data.len() >= 14 => match (data[12], data[13]) {
            (0x08, 0x00) => (true, 14),
            (0x86, 0xDD) => (false, 14),
            _ => return None,
        },
        LINKTYPE_LINUX_SLL if data.len() >= 16 => match (data[14], data[15]) {
            (0x08, 0x00) => (true, 16),
            (0x86, 0xDD) => (false, 16),
            _ => return None,
        },
        LINKTYPE_LINUX_SLL2 if data.len() >= 20 => match (data[0], data[1]) {
            (0x08, 0x00) => (true, 20),
            (0x86, 0xDD) => (false, 20),
            _ => return None,
        },
        LINKTYPE_RAW | LINKTYPE_RAW_OPENBSD | LINKTYPE_IPV4 | LINKTYPE_IPV6 if !data.is_empty() => {
            (data[0] >> 4 == 4, 0)
        }
        LINKTYPE_PPP | LINKTYPE_PPP_HDLC if data.len() >= 4 && data[0] == 0xFF && data[1] == 0x03 => {
            match (data[2], data[3]) {
                (0x00, 0x21) => (true, 4),
                (0x00, 0x57) => (false, 4),
                _ => return None,
            }
        }
        _ => return None,
    })
}

#[cfg(test)]
#[path = "tests/link.rs"]
mod tests;
