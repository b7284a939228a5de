"""Test certificates of the sizes used in imc24 §3 (1,212 B and 5,113 B), and one of twice the large size.

imc24 arms its server with one certificate that fits a 1-RTT handshake (1,212 B) and one that exceeds the
anti-amplification limit (5,113 B). We reproduce both as a two-certificate chain (leaf signed by a
self-signed CA, ECDSA P-256) whose DER sizes add up to exactly those numbers; the leaf is padded with a
private, non-critical extension. Keys are derived from fixed integers so that regenerating gives the same keys;
ECDSA signatures are randomized, so the PEMs are committed under ``certs/`` and regenerated only on purpose
(``python -m quicack.testbed.certs``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

CERT_DIR = Path(__file__).parent / "certs"
# Total DER bytes of the served chain (leaf + CA), imc24 §3; 'xlarge' (twice 'large', beyond the paper) exceeds
# the amplification limit of clients whose ClientHello takes two datagrams (quic-go, go-x-net: 3 × ~2.4 kB).
CERT_SIZES = {"small": 1212, "large": 5113, "xlarge": 10226}
_PAD_OID = x509.ObjectIdentifier("1.3.6.1.4.1.55555.1.1")
_NOT_BEFORE = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
_NOT_AFTER = dt.datetime(2044, 1, 1, tzinfo=dt.UTC)
# The name the browsers reach the testbed's servers by (quicack.testbed.browsers): a URL with an IP address would
# have no name for their certificate checks.
SERVER_NAME = "quicack.test"
_SERVER_NAMES = ["server", "server4", "localhost", SERVER_NAME]


@dataclass(frozen=True)
class CertPaths:
    """Where a chain and its key live on disk."""

    chain: Path
    key: Path
    chain_der_bytes: int


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _ca(key: ec.EllipticCurvePrivateKey) -> x509.Certificate:
    return (
        x509.CertificateBuilder()
        .subject_name(_name("quicack test CA"))
        .issuer_name(_name("quicack test CA"))
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(_NOT_BEFORE)
        .not_valid_after(_NOT_AFTER)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(key, hashes.SHA256())
    )


def _leaf(key: ec.EllipticCurvePrivateKey, ca_key: ec.EllipticCurvePrivateKey, pad: int) -> x509.Certificate:
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name("server"))
        .issuer_name(_name("quicack test CA"))
        .public_key(key.public_key())
        .serial_number(2)
        .not_valid_before(_NOT_BEFORE)
        .not_valid_after(_NOT_AFTER)
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName(n) for n in _SERVER_NAMES]),
            critical=False,
        )
    )
    if pad > 0:
        builder = builder.add_extension(x509.UnrecognizedExtension(_PAD_OID, b"\x00" * pad), critical=False)
    return builder.sign(ca_key, hashes.SHA256())


def build_chain(target_bytes: int, key_seed: int) -> tuple[list[x509.Certificate], ec.EllipticCurvePrivateKey]:
    """Return (chain, leaf key) whose DER sizes sum to exactly `target_bytes`."""
    ca_key = ec.derive_private_key(key_seed, ec.SECP256R1())
    leaf_key = ec.derive_private_key(key_seed + 1, ec.SECP256R1())
    ca = _ca(ca_key)
    ca_len = len(ca.public_bytes(serialization.Encoding.DER))
    pad = 0
    # ECDSA signature length varies by a byte or two and DER length fields grow at 128/256, so iterate.
    for _ in range(2000):
        leaf = _leaf(leaf_key, ca_key, pad)
        total = ca_len + len(leaf.public_bytes(serialization.Encoding.DER))
        if total == target_bytes:
            return [leaf, ca], leaf_key
        if total < target_bytes:
            pad += max(1, (target_bytes - total) // 2) if target_bytes - total > 8 else 1
        else:
            pad = max(0, pad - 1)
    raise RuntimeError(f"could not hit {target_bytes} B")


def write_chain(kind: str, out_dir: Path = CERT_DIR) -> CertPaths:
    chain, key = build_chain(CERT_SIZES[kind], key_seed=0x51AC_0000 + len(kind))
    out_dir.mkdir(parents=True, exist_ok=True)
    chain_path = out_dir / f"{kind}_chain.pem"
    key_path = out_dir / f"{kind}_key.pem"
    chain_path.write_bytes(b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return CertPaths(chain_path, key_path, chain_der_bytes(chain_path))


def chain_der_bytes(chain_pem: Path) -> int:
    certs = x509.load_pem_x509_certificates(chain_pem.read_bytes())
    return sum(len(c.public_bytes(serialization.Encoding.DER)) for c in certs)


def cert_paths(kind: str) -> CertPaths:
    """The committed chain of `kind` ('small', 'large' or 'xlarge'); generated if missing."""
    chain = CERT_DIR / f"{kind}_chain.pem"
    key = CERT_DIR / f"{kind}_key.pem"
    if not (chain.exists() and key.exists()):
        return write_chain(kind)
    return CertPaths(chain, key, chain_der_bytes(chain))


@dataclass(frozen=True)
class DomainCertificate:
    """A certificate for one server name (leaf for `sni` + the test CA), as PEM, for the emulated CDN's store."""

    sni: str
    chain_pem: bytes
    key_pem: bytes


_DOMAIN_CA_SEED = 0x51AC_C000


def domain_certificate(sni: str) -> DomainCertificate:
    """A leaf for exactly `sni` signed by the test CA; the leaf key is derived from the name (same name, same key).

    Unpadded (≈ 800 B of DER for leaf + CA) so that a scan's capture stays small; the chain still takes one
    Initial + Handshake flight, like most CDN certificates with ECDSA keys.
    """
    ca_key = ec.derive_private_key(_DOMAIN_CA_SEED, ec.SECP256R1())
    leaf_seed = int.from_bytes(hashlib.sha256(sni.encode()).digest()[:16], "big") | 1
    leaf_key = ec.derive_private_key(leaf_seed, ec.SECP256R1())
    ca = _ca(ca_key)
    leaf = (
        x509.CertificateBuilder()
        .subject_name(_name(sni))
        .issuer_name(_name("quicack test CA"))
        .public_key(leaf_key.public_key())
        .serial_number(leaf_seed & 0xFFFF_FFFF)
        .not_valid_before(_NOT_BEFORE)
        .not_valid_after(_NOT_AFTER)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(sni)]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    chain = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in (leaf, ca))
    key = leaf_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return DomainCertificate(sni, chain, key)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=CERT_DIR)
    args = ap.parse_args()
    for kind in CERT_SIZES:
        p = write_chain(kind, args.out)
        print(f"{kind}: {p.chain} ({p.chain_der_bytes} B DER)")


if __name__ == "__main__":
    main()
