#!/usr/bin/env python3
"""Rewrite the blocks of a real pcapng capture into forms other writers use (how tests/data/pcapng_forms/ was made).

    python tests/tools/rewrite_pcapng_blocks.py IN.pcapng OUT.pcapng --tsoffset 100 --tsresol 9
        every Interface Description Block gets the options if_tsoffset = 100 (option 14: seconds to add to every
        timestamp) and if_tsresol = 9 (option 9: nanoseconds), and every Enhanced Packet Block's timestamp is
        rewritten in nanoseconds minus the 100 s, so that timestamp + offset is the time the packet was recorded
    python tests/tools/rewrite_pcapng_blocks.py IN.pcapng OUT.pcapng --obsolete-packet-blocks
        every Enhanced Packet Block becomes an obsolete Packet Block (type 2: interface id and drops count in 16
        bits each, then the same timestamp, lengths and packet bytes), as pcapng writers before 2010 wrote them

The input is a little-endian pcapng whose Interface Description Blocks carry no options (what `editcap -F pcapng`
writes for a classic pcap); the other blocks are copied as they are. Standard library only.
"""

from __future__ import annotations

import argparse
import struct
from pathlib import Path

IDB, PB, EPB = 0x00000001, 0x00000002, 0x00000006
OPTION_TSRESOL, OPTION_TSOFFSET, OPTION_END = 9, 14, 0


def _block(block_type: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    length = len(body) + 12
    return struct.pack("<II", block_type, length) + body + struct.pack("<I", length)


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def rewrite(data: bytes, tsoffset: int | None, tsresol: int, obsolete: bool) -> bytes:
    out, at = [], 0
    while at < len(data):
        block_type, length = struct.unpack_from("<II", data, at)
        body = data[at + 8 : at + length - 4]
        at += length
        if block_type == IDB and tsoffset is not None:
            if len(body) != 8:
                raise SystemExit("an Interface Description Block with options: not the input this tool expects")
            options = _option(OPTION_TSOFFSET, struct.pack("<q", tsoffset)) + _option(OPTION_TSRESOL, bytes([tsresol]))
            out.append(_block(IDB, body + options + _option(OPTION_END, b"")))
        elif block_type == EPB and (tsoffset is not None or obsolete):
            interface, high, low, caplen, wire_length = struct.unpack_from("<IIIII", body)
            ticks = (high << 32) | low  # microseconds: the IDBs of the input have no if_tsresol
            if tsoffset is not None:
                ticks = ticks * 10 ** (tsresol - 6) - tsoffset * 10**tsresol
            packet = body[20 : 20 + caplen]
            if obsolete:
                header = struct.pack("<HHIIII", interface, 0, ticks >> 32, ticks & 0xFFFFFFFF, caplen, wire_length)
                out.append(_block(PB, header + packet))
            else:
                header = struct.pack("<IIIII", interface, ticks >> 32, ticks & 0xFFFFFFFF, caplen, wire_length)
                out.append(_block(EPB, header + packet))
        else:
            out.append(data[at - length : at])
    return b"".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--tsoffset", type=int, help="seconds: written as if_tsoffset, taken off every timestamp")
    parser.add_argument("--tsresol", type=int, default=6, help="with --tsoffset: if_tsresol (a power of ten)")
    parser.add_argument("--obsolete-packet-blocks", action="store_true")
    args = parser.parse_args()
    data = args.source.read_bytes()
    args.target.write_bytes(rewrite(data, args.tsoffset, args.tsresol, args.obsolete_packet_blocks))


if __name__ == "__main__":
    main()
