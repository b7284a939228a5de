#!/usr/bin/env python3
"""Fragment the IPv6 datagrams of a real capture with scapy (how tests/data/pcap/*_ipv6_fragments_derived.* was made).

    pip install --target /tmp/scapy scapy==2.8.0          # scapy is not a quicack dependency: only this tool uses it
    zstd -d tests/data/pcap/aioquic_ipv6_sll2.pcap.zst -o /tmp/ipv6.pcap
    PYTHONPATH=/tmp/scapy python tests/tools/fragment_ipv6_capture.py /tmp/ipv6.pcap OUT.pcap --size 560
    zstd -19 OUT.pcap

Every IPv6 packet longer than `--size` bytes is cut by scapy's `fragment6` (RFC 8200 Fragment headers, each
fragment at most `--size` bytes), each fragment a record of its own with the packet's time and link-layer header;
the fragments of the first packet so cut are written last first (out of order, as a network may deliver them).
Linux cuts IPv6 datagrams only above 1,280 bytes (IPv6's minimum MTU), which the 1,200-byte QUIC datagrams of the
recording are not: hence a derived capture. Reading needs the link type scapy writes back (Linux cooked v2 here).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from scapy.layers.inet6 import IPv6, IPv6ExtHdrFragment, fragment6
from scapy.utils import PcapReader, PcapWriter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--size", type=int, default=560, help="largest fragment, bytes (IPv6 header included)")
    args = parser.parse_args()
    reversed_first = False
    with PcapReader(str(args.source)) as reader:
        linktype = reader.linktype
        with PcapWriter(str(args.target), linktype=linktype, sync=True) as writer:
            for identification, packet in enumerate(reader, start=1):
                ip = packet.getlayer(IPv6)
                if ip is None or len(ip) <= args.size:
                    writer.write(packet)
                    continue
                link = packet.copy()
                link[IPv6].underlayer.remove_payload()
                # the same IPv6 header (next header and length recomputed), a Fragment header, the same UDP datagram
                header = IPv6(src=ip.src, dst=ip.dst, hlim=ip.hlim, tc=ip.tc, fl=ip.fl)
                pieces = fragment6(header / IPv6ExtHdrFragment(id=identification) / ip.payload.copy(), args.size)
                if not reversed_first:
                    pieces, reversed_first = pieces[::-1], True
                for piece in pieces:
                    record = link / piece
                    record.time = packet.time
                    record.wirelen = len(record)  # not the whole packet's, which the link layer's copy keeps
                    writer.write(record)


if __name__ == "__main__":
    main()
