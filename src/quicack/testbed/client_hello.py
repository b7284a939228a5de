"""The server name of a TLS ClientHello, read from the start of a client's Initial CRYPTO data.

A CDN frontend must know the server name before it can choose (or fetch) the certificate; aioquic has no SNI
callback, so the frontend reads the name itself from the first CRYPTO frame (offset 0), before TLS sees it.
"""

from __future__ import annotations

_CLIENT_HELLO = 1
_SERVER_NAME_EXTENSION = 0
_HOST_NAME = 0


def client_hello_server_name(crypto: bytes) -> str | None:
    """The host name of the server_name extension, or None (not a ClientHello, cut short, or no SNI)."""
    try:
        return _server_name(memoryview(crypto))
    except IndexError:  # the ClientHello continues in a later frame
        return None


def _u16(b: memoryview, at: int) -> int:
    return (b[at] << 8) | b[at + 1]


def _server_name(b: memoryview) -> str | None:
    if b[0] != _CLIENT_HELLO:
        return None
    at = 4 + 2 + 32  # handshake header, legacy_version, random
    at += 1 + b[at]  # legacy_session_id
    at += 2 + _u16(b, at)  # cipher_suites
    at += 1 + b[at]  # legacy_compression_methods
    end = at + 2 + _u16(b, at)
    at += 2
    while at + 4 <= end:
        ext_type, ext_len = _u16(b, at), _u16(b, at + 2)
        body = at + 4
        if ext_type == _SERVER_NAME_EXTENSION:
            # server_name_list length (2), then entries: name_type (1), length (2), name
            pos, list_end = body + 2, body + 2 + _u16(b, body)
            while pos + 3 <= list_end:
                name_type, name_len = b[pos], _u16(b, pos + 1)
                if name_type == _HOST_NAME:
                    if pos + 3 + name_len > len(b):
                        raise IndexError
                    return bytes(b[pos + 3 : pos + 3 + name_len]).decode("ascii", errors="replace")
                pos += 3 + name_len
            return None
        at = body + ext_len
    return None
