"""Time to first byte of the response *body*, from the client qlog and from the client-side capture.

The request stream is the client's first bidirectional stream (id 0) for HTTP/3 and hq alike;
the server's control and QPACK streams (3, 7, 11, ...) and MAX_STREAMS frames never count
(the imc24 artifact matched any frame name containing "stream" and so measured the server's
SETTINGS stream).

Where the body starts on that stream: for hq the whole stream is body (offset 0). For HTTP/3 the
stream is HEADERS frame, DATA frame header(s), body. Neither the qlogs of every client nor the
capture tables expose HTTP/3 framing, but the stream's final size (offset + length of the frame
with FIN) and the served file size are known, so ``body_start = final_size - file_bytes``: exact
for one DATA frame (aioquic's server sends one), a few bytes late per extra DATA frame header,
which never moves the time to another packet of a 10 KB response.
"""

from __future__ import annotations

import polars as pl

from quicack.layout.vantage import SIM_LEFT

REQUEST_STREAM_ID = 0
# Client-side capture point of the emulated link (the client's own qlog is the other source).
CLIENT_CAPTURE_VANTAGE = SIM_LEFT


def request_stream_frames(frames: pl.DataFrame) -> pl.DataFrame:
    """Server-to-client STREAM frames of the request stream as the client saw them: received
    (client qlog) or captured at the client side of the link."""
    # Lazy, with only the columns its callers use: a download's frames are mostly these, and gathering every
    # column of them doubled the derive's memory on a long connection.
    return (
        frames.lazy()
        .filter(
            (pl.col("frame_type") == "stream")
            & (pl.col("stream_id") == REQUEST_STREAM_ID)
            & (pl.col("direction") == "s2c")
            & (
                ((pl.col("source") == "qlog") & (pl.col("vantage") == "client") & (pl.col("event") == "received"))
                | ((pl.col("source") == "pcap") & (pl.col("vantage") == CLIENT_CAPTURE_VANTAGE))
            )
        )
        .select("run_id", "source", "time_ms", pl.col("offset").fill_null(0), pl.col("length").fill_null(0), "fin")
        .collect()
    )


def body_start_offsets(runs: pl.DataFrame, frames: pl.DataFrame) -> pl.DataFrame:
    """Per run: stream offset of the response body's first byte (``final_size - file_bytes``),
    from whichever source saw the FIN; null when no FIN was seen or the file size is unknown."""
    return _body_start_offsets(runs, request_stream_frames(frames))


def _body_start_offsets(runs: pl.DataFrame, stream_frames: pl.DataFrame) -> pl.DataFrame:
    final_sizes = (
        stream_frames
        .filter(pl.col("fin").fill_null(False))
        .group_by("run_id")
        .agg((pl.col("offset") + pl.col("length")).max().alias("final_size"))
    )
    return (
        runs.select("run_id", "file_bytes")
        .join(final_sizes, on="run_id", how="inner")
        .with_columns((pl.col("final_size") - pl.col("file_bytes")).alias("body_start"))
        # A negative start means the stream is shorter than the file (truncated or wrong size):
        # unknown, not zero.
        .filter(pl.col("body_start") >= 0)
        .select("run_id", "body_start")
    )


def first_opaque_server_packet(packets: pl.DataFrame) -> pl.DataFrame:
    """Per run: when the client-side capture first holds a server packet it could not decrypt
    (e.g. cut by the snap length). A body byte may hide in it, so a capture TTFB after that
    moment is unknown."""
    return (
        packets.filter(
            (pl.col("source") == "pcap")
            & (pl.col("vantage") == CLIENT_CAPTURE_VANTAGE)
            & (pl.col("direction") == "s2c")
            & pl.col("packet_type").is_in(["initial", "handshake", "0rtt", "1rtt"])
            & ~pl.col("decrypted")
        )
        .group_by("run_id")
        .agg(pl.col("time_ms").min().alias("first_opaque_ms"))
    )


def ttfb_by_source(runs: pl.DataFrame, frames: pl.DataFrame, packets: pl.DataFrame) -> pl.DataFrame:
    """Per run: ``ttfb_ms`` (client qlog), ``ttfb_capture_ms`` (client-side capture) and their
    difference; the time of the first frame carrying a byte at or beyond the body start. The
    capture value is null when an undecrypted server packet came before it."""
    stream_frames = request_stream_frames(frames)  # once: on a download they are most of the frames
    starts = _body_start_offsets(runs, stream_frames)
    first_body = (
        stream_frames
        .join(starts, on="run_id", how="inner")
        .filter(pl.col("offset") + pl.col("length") > pl.col("body_start"))
        .group_by("run_id", "source")
        .agg(pl.col("time_ms").min())
    )
    wide = first_body.pivot(on="source", index="run_id", values="time_ms")
    for source in ("qlog", "pcap"):
        if source not in wide.columns:
            wide = wide.with_columns(pl.lit(None, pl.Float64).alias(source))
    capture = (
        pl.when(pl.col("first_opaque_ms").is_null() | (pl.col("pcap") < pl.col("first_opaque_ms")))
        .then(pl.col("pcap"))
        .otherwise(None)
    )
    return (
        wide.join(first_opaque_server_packet(packets), on="run_id", how="left")
        .with_columns(capture.alias("pcap"))
        .select(
            "run_id",
            pl.col("qlog").alias("ttfb_ms"),
            pl.col("pcap").alias("ttfb_capture_ms"),
            (pl.col("qlog") - pl.col("pcap")).alias("ttfb_qlog_minus_capture_ms"),
        )
    )
