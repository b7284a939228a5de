"""Minimal classic-pcap reader for the testbed's own checks (calibration, fidelity).

The package's full capture decoder lives in ``quicack.pcap``; this one only needs UDP/IPv4 datagrams from
tcpdump on veths (Ethernet link type) and stays dependency-free so the testbed can run without the rest.
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from ipaddress import IPv4Address
from pathlib import Path

_LINKTYPE_ETHERNET = 1
_LINKTYPE_RAW = 101
_LINKTYPE_LINUX_SLL = 113


@dataclass(frozen=True)
class UdpDatagram:
    time_ns: int
    src: IPv4Address
    dst: IPv4Address
    sport: int
    dport: int
    payload: bytes


def _open(path: Path):  # type: ignore[no-untyped-def]
    return gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")


def read_udp(path: Path) -> Iterator[UdpDatagram]:
    with _open(path) as f:
        head = f.read(24)
        if len(head) < 24:
            return
        magic = struct.unpack("<I", head[:4])[0]
        if magic in (0xA1B2C3D4, 0xA1B23C4D):
            endian = "<"
        else:
            endian = ">"
            magic = struct.unpack(">I", head[:4])[0]
        nano = magic == 0xA1B23C4D
        linktype = struct.unpack(endian + "I", head[20:24])[0] & 0x0FFFFFFF
        rec = struct.Struct(endian + "IIII")
        while True:
            h = f.read(16)
            if len(h) < 16:
                return
            sec, frac, incl, _orig = rec.unpack(h)
            data = f.read(incl)
            t = sec * 1_000_000_000 + (frac if nano else frac * 1000)
            if linktype == _LINKTYPE_ETHERNET:
                if len(data) < 14 or data[12:14] != b"\x08\x00":
                    continue
                ip = data[14:]
            elif linktype == _LINKTYPE_LINUX_SLL:
                if data[14:16] != b"\x08\x00":
                    continue
                ip = data[16:]
            elif linktype == _LINKTYPE_RAW:
                ip = data
            else:
                raise ValueError(f"{path}: unsupported link type {linktype}")
            if len(ip) < 28 or ip[0] >> 4 != 4 or ip[9] != 17:
                continue
            ihl = (ip[0] & 0x0F) * 4
            udp = ip[ihl:]
            sport, dport, ulen = struct.unpack("!HHH", udp[:6])
            yield UdpDatagram(t, IPv4Address(ip[12:16]), IPv4Address(ip[16:20]), sport, dport, bytes(udp[8:ulen]))
