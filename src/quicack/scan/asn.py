"""Origin AS of scanned addresses (longest prefix match) and their CDN (imc24 Table 5).

Prefix files, detected by content:
* pyasn's ``ipasn`` file (what the imc24 authors built from a RouteViews RIB with ``pyasn_util_convert.py``):
  ``<prefix>/<length><TAB><asn>`` per line, comment lines starting with ``;``;
* a CSV with the header ``prefix,asn``.

CDN names come from ``data/reference/cdn_asn.csv`` (``quicack.reference.cdn_asn``, applied by ``measurement``); with
a prefix file, any other AS (and an unrouted address) is "Others", as in the paper; without one, AS and CDN are null
(unknown, not "Others").
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from .qscanner_files import Issues, read_text_bytes


@dataclass
class PrefixTable:
    """Origin AS by prefix: one dictionary network → AS per (IP version, prefix length)."""

    by_length: dict[tuple[int, int], dict[int, int]] = field(default_factory=dict)

    def add(self, version: int, length: int, network: int, asn: int) -> None:
        self.by_length.setdefault((version, length), {})[network] = asn

    def origin_asns(self, addresses: pl.Series) -> pl.DataFrame:
        """``address`` → ``origin_asn`` by longest prefix match, for the distinct addresses given (unrouted and
        unparseable addresses are left out)."""
        lengths = sorted(self.by_length, key=lambda key: -key[1])
        found: dict[str, int] = {}
        # One Python step per distinct address and prefix length (at most 33 for IPv4): the scan has far fewer
        # distinct addresses than connections.
        for text in addresses.drop_nulls().unique().to_list():
            try:
                address = ipaddress.ip_address(text)
            except ValueError:
                continue
            value, bits = int(address), address.max_prefixlen
            for version, length in lengths:
                if version == address.version:
                    asn = self.by_length[(version, length)].get(value >> (bits - length) << (bits - length))
                    if asn is not None:
                        found[text] = asn
                        break
        return pl.DataFrame(
            {"address": list(found), "origin_asn": list(found.values())},
            schema={"address": pl.Utf8, "origin_asn": pl.Int64},
        )


def read_prefix_table(path: Path, issues: Issues) -> PrefixTable:
    """A pyasn ipasn file or a ``prefix,asn`` CSV; lines that are not a prefix and one AS become one warning."""
    text = read_text_bytes(path).decode("utf-8", errors="replace")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith(";")]
    is_csv = bool(lines) and lines[0].replace(" ", "").lower().startswith("prefix,asn")
    table = PrefixTable()
    bad = 0
    # One Python step per prefix (a RIB has ~1M): ipaddress validates what string splitting would not.
    for line in lines[1:] if is_csv else lines:
        fields = line.split(",") if is_csv else line.split()
        try:
            network = ipaddress.ip_network(fields[0].strip(), strict=False)
            table.add(network.version, network.prefixlen, int(network.network_address), int(fields[1]))
        except (ValueError, IndexError):
            bad += 1  # AS sets ({1,2}) and malformed lines
    if bad:
        issues.add(path, "warning", f"{bad} prefix line(s) not understood (AS sets or malformed); left out")
    return table
