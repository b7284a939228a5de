"""Per-connection decoding state: who is client and server, connection IDs, keys, CRYPTO streams.

One `Connection` per QUIC connection in a capture. Keys are made lazily the first time a packet of a
space needs them: Initial keys from the client's first Destination Connection ID, the other spaces from
the keylog secrets of the connection's client random once the ClientHello (and, for the cipher suite,
the ServerHello) has been read from the Initial CRYPTO streams.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .keylog import (
    CLIENT_APPLICATION,
    CLIENT_EARLY,
    CLIENT_HANDSHAKE,
    SERVER_APPLICATION,
    SERVER_HANDSHAKE,
    Keylog,
)
from .quic import CIPHER_SUITES_TO_TRY, CryptoError, DecryptedPacket, PacketKeys, initial_keys
from .versions import quic_version

if TYPE_CHECKING:  # the Python TLS twin is imported when used: the compiled engine has its own
    from .tls import CryptoStream, TransportParameters

C2S, S2C = "c2s", "s2c"
SECRET_LABELS = {
    ("handshake", C2S): CLIENT_HANDSHAKE,
    ("handshake", S2C): SERVER_HANDSHAKE,
    ("1rtt", C2S): CLIENT_APPLICATION,
    ("1rtt", S2C): SERVER_APPLICATION,
    ("0rtt", C2S): CLIENT_EARLY,
}
# the keys make_keys_early makes ahead of their first packet
EARLY_KEYS = (("handshake", C2S), ("handshake", S2C), ("1rtt", C2S), ("1rtt", S2C))
MAX_CLIENT_RANDOM_GUESSES = 32
MAX_FAILED_KEY_SEARCHES = 8


@dataclass
class Endpoint:
    """One side of a connection."""

    address: tuple[str, int]
    cid_length: int | None = None  # length of the connection IDs this endpoint chose (DCIDs of packets to it)
    scid: bytes | None = None  # the Source Connection ID of its latest long header packet
    transport_parameters: TransportParameters | None = None

    @property
    def ack_delay_exponent(self) -> int:
        return self.transport_parameters.ack_delay_exponent if self.transport_parameters else 3


class PacketNumbers:
    """Largest packet number seen per direction and packet number space (the twin of quicack_core's)."""

    __slots__ = ("_largest",)

    def __init__(self) -> None:
        self._largest: dict[tuple[str, str], int] = {}

    def largest(self, direction: str, space: str) -> int:
        """-1 before the first packet."""
        return self._largest.get((direction, space), -1)

    def update(self, direction: str, space: str, packet_number: int) -> None:
        if packet_number > self._largest.get((direction, space), -1):
            self._largest[(direction, space)] = packet_number


@dataclass
class Connection:
    number: int
    client: Endpoint
    server: Endpoint
    version: int
    initial_secret_dcid: bytes  # client's first DCID, or the Retry's SCID after a Retry
    time_origin_ns: int
    keylog: Keylog
    odcid: str = ""  # hex of the client's first DCID: the connection's name in the tables (kept after a Retry)
    # The client's Source Connection ID from its first Initial (None when the capture missed it): a client Initial
    # with another one on the same UDP 4-tuple is a new connection reusing the ports (long captures, scans).
    client_scid: bytes | None = None
    cids: set[bytes] = field(default_factory=set)
    keys: dict[tuple[str, str], PacketKeys | None] = field(default_factory=dict)
    # the PacketKeys class (quic's or quicack_core's) and the PacketNumbers of the decoder's engine
    keys_class: type[PacketKeys] = PacketKeys
    crypto_stream_class: type | None = None  # tls.CryptoStream (None: that one) or quicack_core's
    packet_numbers: PacketNumbers = field(default_factory=PacketNumbers)
    flow_keys: list[tuple[str, int, str, int]] = field(default_factory=list)  # the UDP flows it uses
    lane_state: tuple | None = None  # what the compiled engine's lane was last told about it (decode._offer_to_lane)
    crypto_streams: dict[tuple[str, str], CryptoStream] = field(default_factory=dict)
    client_random: bytes | None = None
    cipher_suite: int | None = None
    failed_key_searches: dict[tuple[str, str], int] = field(default_factory=dict)
    # Keys made ahead of their first packet (make_keys_early), by (space, direction), with what made them.
    early_keys: dict[tuple[str, str], tuple[tuple[bytes, int, bytes, int], PacketKeys]] = field(default_factory=dict)
    # A draft before -22 is read with draft-22's keys only once a packet authenticated (versions.QuicVersion.tentative)
    version_confirmed: bool = False
    version_refuted: bool = False

    def sender(self, direction: str) -> Endpoint:
        return self.client if direction == C2S else self.server

    def receiver(self, direction: str) -> Endpoint:
        return self.server if direction == C2S else self.client

    def crypto_stream(self, direction: str, pn_space: str) -> CryptoStream:
        key = (direction, pn_space)
        stream = self.crypto_streams.get(key)
        if stream is None:
            if self.crypto_stream_class is None:
                from .tls import CryptoStream

                self.crypto_stream_class = CryptoStream
            if quic_version(self.version).legacy_transport_parameters:  # drafts up to -26
                stream = self.crypto_stream_class(legacy_transport_parameters=True)
            else:
                stream = self.crypto_stream_class()
            self.crypto_streams[key] = stream
        return stream

    def learn_from_crypto(self, direction: str, stream: CryptoStream) -> None:
        facts = stream.facts
        if facts.client_random is not None and self.client_random is None:
            self.client_random = facts.client_random
        if facts.cipher_suite is not None and self.cipher_suite is None:
            self.cipher_suite = facts.cipher_suite
        if facts.transport_parameters is not None:
            self.sender(direction).transport_parameters = facts.transport_parameters

    def on_retry(self, retry_scid: bytes) -> None:
        # After a Retry the client derives new Initial keys from the Retry's Source Connection ID.
        self.initial_secret_dcid = retry_scid
        # The client answers with a new Initial whose CRYPTO stream starts again at offset 0, and some
        # clients (aioquic) restart TLS with a new ClientHello (new client random) there.
        self.crypto_streams.pop((C2S, "initial"), None)
        self.client_random = None
        self.keys.pop(("initial", C2S), None)
        self.keys.pop(("initial", S2C), None)
        self.cids.add(retry_scid)

    def packet_keys(self, key_type: str, direction: str) -> PacketKeys | None:
        """Keys for a space ('initial', 'handshake', '0rtt', '1rtt') and direction; None if unavailable."""
        key = (key_type, direction)
        keys = self.keys.get(key, False)
        if keys is not False:
            return keys  # type: ignore[return-value]  # False only as get's default
        if key_type == "initial":
            client_keys, server_keys = initial_keys(self.initial_secret_dcid, self.version, self.keys_class)
            self.keys[("initial", C2S)] = client_keys
            self.keys[("initial", S2C)] = server_keys
            return self.keys[key]
        return None  # decided on the first packet by `decrypt_with_keylog`

    def decrypt_with_keylog(
        self,
        key_type: str,
        direction: str,
        data: bytes,
        start: int,
        pn_offset: int,
        end: int,
        expected: int,
        short: bool,
    ) -> DecryptedPacket | None:
        """Find the keys of a space from the keylog by trying the plausible (client random, cipher suite) pairs."""
        label = SECRET_LABELS.get((key_type, direction))
        if label is None or not self.keylog.secrets:
            return None
        failures = self.failed_key_searches.get((key_type, direction), 0)
        if failures >= MAX_FAILED_KEY_SEARCHES:
            return None
        if self.client_random is not None:
            randoms = [self.client_random]
        else:
            # No ClientHello seen (capture started late): try the keylog's connections.
            randoms = list(self.keylog.secrets)[:MAX_CLIENT_RANDOM_GUESSES]
        suites = (
            [self.cipher_suite] if self.cipher_suite is not None and key_type != "0rtt" else list(CIPHER_SUITES_TO_TRY)
        )
        if len(randoms) == 1 and len(suites) == 1:
            # Nothing to guess: these are the keys, even if this packet does not decrypt (corrupt, wrong secret).
            secret = self.keylog.get(randoms[0], label)
            if secret is None:
                self.keys[(key_type, direction)] = None
                return None
            keys = self.keys[(key_type, direction)] = self.keys_class.from_secret(suites[0], secret, self.version)
            return keys.decrypt(data, start, pn_offset, end, expected, short)
        for client_random in randoms:
            secret = self.keylog.get(client_random, label)
            if secret is None:
                continue
            for suite in suites:
                if len(secret) == 48 and suite != 0x1302 or len(secret) == 32 and suite == 0x1302:
                    continue  # the secret's size follows the suite's hash
                try:
                    keys = self.keys_class.from_secret(suite, secret, self.version)
                    packet = keys.decrypt(data, start, pn_offset, end, expected, short)
                except (CryptoError, ValueError):
                    continue
                self.keys[(key_type, direction)] = keys
                if self.client_random is None:
                    self.client_random = client_random
                return packet
        # Give up after a few packets, or the search would run for every packet of a capture without secrets.
        self.failed_key_searches[(key_type, direction)] = failures + 1
        return None

    def make_keys_early(self) -> None:
        """Make the Handshake and 1-RTT keys of each direction before the first packet of their space, when
        `decrypt_with_keylog` would take them at that packet without guessing (client random and cipher suite
        known, the secret in the keylog): the compiled engine's lane can then decode that packet's datagram too,
        instead of the Python decoder (the client's datagram with its Handshake Finished and first 1-RTT packet).

        The keys are exactly those `decrypt_with_keylog` would make at the first packet: made from the same inputs
        (client random, cipher suite, secret, version), remade whenever one of them changes before that packet
        (a late version change, a Retry), and dropped when they are no longer determined. Which packet came first
        the keys tell themselves (`used`, set by any decryption attempt, by the decoder or the lane). Only for
        keys with `used` (quicack_core's); the pure-Python engine has no lane and keeps making them at the packet.
        """
        for key in EARLY_KEYS:
            early = self.early_keys.get(key)
            if early is not None:
                inputs, keys = early
                # (quicack_core's keys only) its first packet came: these are now the keys decrypt_with_keylog would
                # have made
                if getattr(keys, "used", False):
                    del self.early_keys[key]
                    continue
                if inputs == self._early_key_inputs(key):
                    continue
                del self.early_keys[key]
                del self.keys[key]
            elif key in self.keys:
                continue
            key_inputs = self._early_key_inputs(key)
            if key_inputs is None:
                continue
            try:
                keys = self.keys_class.from_secret(key_inputs[1], key_inputs[2], key_inputs[3])
            except ValueError:
                continue  # a suite without keys here: decrypt_with_keylog reports it at the first packet
            self.keys[key] = keys
            self.early_keys[key] = (key_inputs, keys)

    def _early_key_inputs(self, key: tuple[str, str]) -> tuple[bytes, int, bytes, int] | None:
        """(client random, cipher suite, secret, version) when decrypt_with_keylog's no-guess branch would apply."""
        if self.client_random is None or self.cipher_suite is None:
            return None
        if self.failed_key_searches.get(key, 0) >= MAX_FAILED_KEY_SEARCHES:
            return None
        secret = self.keylog.get(self.client_random, SECRET_LABELS[key])
        if secret is None:
            return None
        return self.client_random, self.cipher_suite, secret, self.version

    def key_search_failed(self, key_type: str, direction: str) -> bool:
        return self.failed_key_searches.get((key_type, direction), 0) > 0
