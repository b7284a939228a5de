//! A TCP segment's header fields and option sizes, twin of `quicack.pcap.tcp.tcp_segment` / `split_options`, for
//! the pcap lane (engine.rs): the segments that `tcp_segment` reads without an issue; None for any other (the
//! record then goes to the Python reader, which reports it).

const TCP_FIXED_HEADER_BYTES: usize = 20;
const OPTION_END: u8 = 0;
const OPTION_NOP: u8 = 1;
const OPTION_SACK: u8 = 5;
const OPTION_TIMESTAMPS: u8 = 8;
const TIMESTAMPS: usize = 0;
const SACK: usize = 1;
const OTHER: usize = 2;
const SACK_BLOCK_BYTES: usize = 8;

/// The fields of `tcp.TcpSegment` after its addresses (src_port .. window), in its order.
#[derive(Debug, PartialEq, Eq)]
pub struct TcpFields {
    pub src_port: u16,
    pub dst_port: u16,
    pub header_bytes: usize,
    pub timestamp_option_bytes: usize,
    pub sack_option_bytes: usize,
    pub other_option_bytes: usize,
    pub sack_blocks: usize,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
}

/// (timestamp, SACK, other option bytes, SACK blocks) of an options area, as `tcp.split_options` (whose NOP and
/// EOL padding rules it follows); None where that returns None.
fn split_options(options: &[u8], length: usize) -> Option<([usize; 3], usize)> {
    if options.len() < length {
        return None;
    }
    let mut sizes = [0usize; 3];
    let mut blocks = 0;
    let mut padding = 0;
    let mut last = OTHER;
    let mut at = 0;
    while at < length {
        let kind = options[at];
        if kind == OPTION_NOP {
            padding += 1;
            at += 1;
            continue;
        }
        if kind == OPTION_END {
            padding += length - at;
            break;
        }
        if at + 1 >= length || options[at + 1] < 2 || at + usize::from(options[at + 1]) > length {
            return None;
        }
        let size = usize::from(options[at + 1]);
        last = match kind {
            OPTION_TIMESTAMPS => TIMESTAMPS,
            OPTION_SACK => SACK,
            _ => OTHER,
        };
        if last == SACK {
            blocks = (size - 2) / SACK_BLOCK_BYTES;
        }
        sizes[last] += padding + size;
        padding = 0;
        at += size;
    }
    sizes[last] += padding;
    Some((sizes, blocks))
}

/// The segment whose header starts at `data[at]` in an IP packet of `ip_bytes` bytes on the wire whose header is
/// `ip_header_bytes` long, as `tcp.tcp_segment` reads it; None where that gives an issue.
pub fn tcp_fields(data: &[u8], at: usize, ip_header_bytes: usize, ip_bytes: usize) -> Option<TcpFields> {
    if data.len() < at + TCP_FIXED_HEADER_BYTES {
        return None;
    }
    let header = &data[at..at + TCP_FIXED_HEADER_BYTES];
    let header_bytes = usize::from(header[12] >> 4) * 4;
    if header_bytes < TCP_FIXED_HEADER_BYTES || ip_header_bytes + header_bytes > ip_bytes {
        return None;
    }
    let options_length = header_bytes - TCP_FIXED_HEADER_BYTES;
    let (sizes, sack_blocks) = if options_length > 0 {
        let options = &data[(at + TCP_FIXED_HEADER_BYTES).min(data.len())..(at + header_bytes).min(data.len())];
        split_options(options, options_length)?
    } else {
        ([0; 3], 0)
    };
    let u16_at = |i: usize| u16::from_be_bytes([header[i], header[i + 1]]);
    let u32_at = |i: usize| u32::from_be_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
    Some(TcpFields {
        src_port: u16_at(0),
        dst_port: u16_at(2),
        header_bytes,
        timestamp_option_bytes: sizes[TIMESTAMPS],
        sack_option_bytes: sizes[SACK],
        other_option_bytes: sizes[OTHER],
        sack_blocks,
        seq: u32_at(4),
        ack: u32_at(8),
        flags: header[13],
        window: u16_at(14),
    })
}

#[cfg(test)]
#[path = "tests/tcp.rs"]
mod tests;
