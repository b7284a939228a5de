"""Limits every reader enforces on its input, so that no file, however made, can exhaust memory or time.

One home for the defaults: the Snakemake config (``limits:``), ``quicack ingest-group``, ``quicack pcap`` and
``quicack qlog`` all start from ``DEFAULT_LIMITS`` and override single fields. A limit that trips costs the rest
of one file (or one record, where the format lets the reader find the next one) and one ``ingest_issues`` row
that names the limit's config key, never the process.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields, replace
from typing import Any

MiB = 1 << 20
GiB = 1 << 30


@dataclass(frozen=True, slots=True)
class Limits:
    # One JSON-SEQ/NDJSON qlog record, one pcap record or one pcapng block. Real ones are below 64 KiB (a
    # datagram) or a few KiB (an event); the bound keeps one corrupt length field from claiming gigabytes.
    max_record_bytes: int = 64 * MiB
    # A single-document JSON qlog (aioquic, picoquic, mvfst) is parsed whole: its size bounds the memory.
    max_document_bytes: int = 2 * GiB
    # JSON nesting, checked before the parser sees the text (a qlog nests fewer than 10 levels; orjson 3.8
    # crashes the process near 140k levels).
    max_nesting_depth: int = 200
    # Decompressed bytes per compressed byte read so far. gzip cannot exceed about 1032:1 and a real capture
    # or qlog stays below 30:1, so a stream well above that is a decompression bomb.
    max_compression_ratio: float = 200.0
    # Absolute bound on the decompressed bytes of one file; 0 = none.
    max_decompressed_bytes: int = 0

    @property
    def decompressed_bytes_bound(self) -> int | None:
        return self.max_decompressed_bytes or None


DEFAULT_LIMITS = Limits()

# The ratio is judged only once a stream has produced this much: the first read-ahead of a decompressor
# can make a small real file look more compressed than it is.
BOMB_CHECK_AFTER_BYTES = 4 * MiB


class InputLimitExceeded(Exception):
    """A limit of ``Limits`` tripped; the message names the limit and its config key."""


class DecompressionBomb(InputLimitExceeded):
    """A compressed stream expands far more than any capture or qlog does."""


def config_key(name: str) -> str:
    return f"limits.{name}"


def limits_from_mapping(values: dict[str, Any] | None) -> Limits:
    """Limits from the config's ``limits:`` section (missing keys keep their defaults)."""
    known = {f.name for f in fields(Limits)}
    chosen = {k: v for k, v in (values or {}).items() if v is not None}
    unknown = set(chosen) - known
    if unknown:
        raise ValueError(f"unknown limits: {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})")
    return replace(DEFAULT_LIMITS, **chosen)


def add_limit_arguments(parser: argparse.ArgumentParser) -> None:
    """``--max-record-bytes`` etc., one per field of ``Limits``, each defaulting to ``DEFAULT_LIMITS``."""
    group = parser.add_argument_group("input limits (config key limits.<name>)")
    for f in fields(Limits):
        default = getattr(DEFAULT_LIMITS, f.name)
        group.add_argument(
            "--" + f.name.replace("_", "-"),
            dest=f"limit_{f.name}",
            type=type(default),
            default=default,
            metavar="N",
            help=f"default {default}",
        )


def limits_from_args(args: argparse.Namespace) -> Limits:
    return Limits(**{f.name: getattr(args, f"limit_{f.name}") for f in fields(Limits)})


def limit_arguments(limits: Limits) -> list[str]:
    """Command-line options that reproduce ``limits`` (what the Snakemake rule passes to ``ingest-group``)."""
    out = []
    for f in fields(Limits):
        value = getattr(limits, f.name)
        if value != getattr(DEFAULT_LIMITS, f.name):
            out.append(f"--{f.name.replace('_', '-')}={value}")
    return out
