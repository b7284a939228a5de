"""imc24 handshake figures from testbed captures: Fig. 1 (WFC vs IACK handshake timeline of two real
runs, as a sequence diagram) and Fig. 3 (which QUIC packets travel in which datagram, per client)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import polars as pl
from matplotlib.patches import Patch, Rectangle

from quicack.figures.common import Rendered, setup_style
from quicack.layout.vantage import SIM_LEFT, SIM_RIGHT
from quicack.markup import plural
from quicack.metrics.coalescence import coalescence_patterns
from quicack.metrics.scalars import integer, number, optional_number
from quicack.metrics.selection import MissingData, configuration_runs, representative_run, require_runs
from quicack.rendered import placeholder_when_missing
from quicack.storage.run_batches import RunRows, per_run_batches, rows_of_runs

CLIENT_SIDE, SERVER_SIDE = SIM_LEFT, SIM_RIGHT
SENDER = {"c2s": CLIENT_SIDE, "s2c": SERVER_SIDE}
RECEIVER = {"c2s": SERVER_SIDE, "s2c": CLIENT_SIDE}
PACKET_NAMES = {"initial": "Initial", "handshake": "Handshake", "1rtt": "1-RTT", "0rtt": "0-RTT", "retry": "Retry"}
FRAME_NAMES = {"new_connection_id": "NCID", "handshake_done": "HS_DONE", "ack_ecn": "ACK"}
TLS_NAMES = {
    "client_hello": "ClientHello",
    "server_hello": "ServerHello",
    "encrypted_extensions": "EE",
    "certificate": "Cert",
    "certificate_verify": "CV",
    "finished": "Fin",
}
PACKET_COLORS = {"initial": "#f4c27a", "handshake": "#8fc1e3", "1rtt": "#a8d5a2", "0rtt": "#d6b4e0"}
# Datagrams a sender emits within this time of the previous one (same direction) are one burst.
BURST_MS = 1.0


# ------------------------------------------------------------------------------------------------
# Fig. 1: sequence diagram of one IACK and one WFC run


def _frame_text() -> pl.Expr:
    """A frame as the figure names it: its short name, and for CRYPTO the TLS messages it starts."""
    name = pl.col("frame_type").replace_strict(FRAME_NAMES, default=pl.col("frame_type").str.to_uppercase())
    messages = pl.col("tls_messages").list.eval(pl.element().replace_strict(TLS_NAMES, default=pl.element()))
    with_messages = (pl.col("frame_type") == "crypto") & (pl.col("tls_messages").list.len() > 0)
    return pl.when(with_messages).then(name + "(" + messages.list.join(",") + ")").otherwise(name)


def datagram_contents(packets: pl.DataFrame, frames: pl.DataFrame, run_id: str) -> pl.DataFrame:
    """Per datagram of ``run_id`` at each capture: its packets as ``Type[FRAME,...]`` joined by
    " + " (PADDING and datagram padding left out, a frame type once per packet, CRYPTO with the
    TLS messages it starts), whether it carries an ACK / ack-eliciting frames, and a key that
    identifies the same datagram at the other capture (its packet numbers)."""
    key = ["vantage", "direction", "pn_space", "packet_number"]
    run_frames = frames.filter(
        (pl.col("run_id") == run_id) & (pl.col("source") == "pcap") & (pl.col("frame_type") != "padding")
    )
    per_packet_frames = (
        run_frames.sort("frame_index")
        .with_columns(_frame_text().alias("text"))
        .group_by(key, maintain_order=True)
        .agg(
            pl.col("text").unique(maintain_order=True).str.join(",").alias("frame_text"),
            pl.col("frame_type").is_in(["ack", "ack_ecn"]).any().alias("packet_has_ack"),
        )
    )
    run_packets = (
        packets.filter(
            (pl.col("run_id") == run_id) & (pl.col("source") == "pcap") & (pl.col("packet_type") != "datagram_padding")
        )
        .with_row_index("order")
        .join(per_packet_frames, on=key, how="left")
        .with_columns(
            (
                pl.col("packet_type").replace_strict(PACKET_NAMES, default=pl.col("packet_type"))
                + pl.when(pl.col("decrypted"))
                .then("[" + pl.col("frame_text").fill_null("") + "]")
                .otherwise(pl.lit("[?]"))
            ).alias("packet_text"),
            (pl.col("pn_space").fill_null("?") + ":" + pl.col("packet_number").cast(pl.Utf8).fill_null("?")).alias(
                "packet_key"
            ),
        )
    )
    return (
        run_packets.sort("order")
        .group_by("vantage", "direction", "datagram_index", maintain_order=True)
        .agg(
            pl.col("time_ms").min(),
            pl.col("time_abs_ns").min(),
            pl.col("packet_text").str.join(" + ").alias("content"),
            pl.col("packet_key").sort().str.join(",").alias("match_key"),
            pl.col("packet_has_ack").fill_null(False).any().alias("has_ack"),
            pl.col("ack_eliciting").fill_null(False).any().alias("ack_eliciting"),
            pl.col("frame_text").str.contains("ServerHello").any().fill_null(False).alias("server_hello"),
            pl.col("frame_text").str.contains("ClientHello").any().fill_null(False).alias("client_hello"),
            pl.col("frame_text").str.contains("Fin").any().fill_null(False).alias("finished"),
            pl.col("packet_bytes").sum().alias("bytes"),
        )
    )


def handshake_sequence(packets: pl.DataFrame, frames: pl.DataFrame, run_id: str) -> pl.DataFrame:
    """The handshake of ``run_id`` as arrows: per datagram in send order, when its sender's side
    of the link saw it leave and when the receiver's side saw it arrive (null if it never did),
    in ms since the client's first datagram on one clock (the captures' absolute times), and its
    content. Ends with the first server datagram sent after the client's Finished arrived."""
    contents = datagram_contents(packets, frames, run_id)
    if contents.is_empty():
        raise ValueError(f"no captured packets for run {run_id!r}")
    origin = contents.filter((pl.col("vantage") == CLIENT_SIDE) & (pl.col("direction") == "c2s"))["time_abs_ns"].min()
    sent = pl.concat(
        [contents.filter((pl.col("direction") == d) & (pl.col("vantage") == v)) for d, v in SENDER.items()]
    )
    received = pl.concat(
        [contents.filter((pl.col("direction") == d) & (pl.col("vantage") == v)) for d, v in RECEIVER.items()]
    ).select("direction", "match_key", ((pl.col("time_abs_ns") - origin) / 1e6).alias("received_ms"))
    arrows = (
        sent.with_columns(((pl.col("time_abs_ns") - origin) / 1e6).alias("sent_ms"))
        .join(received.unique(["direction", "match_key"], keep="first"), on=["direction", "match_key"], how="left")
        .sort("sent_ms")
        .select(
            "direction",
            "datagram_index",
            "sent_ms",
            "received_ms",
            "content",
            "bytes",
            "has_ack",
            "ack_eliciting",
            "server_hello",
            "client_hello",
            "finished",
        )
    )
    finished = arrows.filter((pl.col("direction") == "c2s") & pl.col("finished"))
    if finished.height:
        arrived = finished["received_ms"].fill_null(finished["sent_ms"]).min()
        last = arrows.filter((pl.col("direction") == "s2c") & (pl.col("sent_ms") >= arrived))["sent_ms"].min()
        if last is not None:
            arrows = arrows.filter(pl.col("sent_ms") <= last)
    return arrows.with_row_index("order")


def merge_bursts(arrows: pl.DataFrame, burst_ms: float = BURST_MS) -> list[dict]:
    """Consecutive datagrams of one direction sent within ``burst_ms`` of each other become one
    arrow; its label lists the contents (identical ones counted, "2 × ...")."""
    bursts: list[list[dict]] = []
    for row in arrows.iter_rows(named=True):
        last = bursts[-1][-1] if bursts else None
        if last is not None and last["direction"] == row["direction"] and row["sent_ms"] - last["sent_ms"] <= burst_ms:
            bursts[-1].append(row)
        else:
            bursts.append([row])
    merged = []
    for burst in bursts:
        lines: list[tuple[str, int]] = []
        for row in burst:
            if lines and lines[-1][0] == row["content"]:
                lines[-1] = (row["content"], lines[-1][1] + 1)
            else:
                lines.append((row["content"], 1))
        text = "\n".join(f"{n} × {c}" if n > 1 else c for c, n in lines)
        received = [r["received_ms"] for r in burst if r["received_ms"] is not None]
        merged.append(
            {
                "direction": burst[0]["direction"],
                "sent_ms": burst[0]["sent_ms"],
                "received_ms": min(received) if received else None,
                "datagrams": len(burst),
                "bytes": sum(r["bytes"] or 0 for r in burst),
                "label": text,
                "first_index": burst[0]["datagram_index"],
                "last_index": burst[-1]["datagram_index"],
            }
        )
    return merged


def first_rtt_sample(packets: pl.DataFrame, frames: pl.DataFrame, run_id: str) -> dict | None:
    """The client's first RTT sample as its side of the link saw it: arrival of the first server
    ACK (Initial space) minus the departure of the packet it newly acknowledged as largest."""
    left = frames.filter(
        (pl.col("run_id") == run_id) & (pl.col("source") == "pcap") & (pl.col("vantage") == CLIENT_SIDE)
    )
    ack = left.filter(
        (pl.col("direction") == "s2c")
        & pl.col("frame_type").is_in(["ack", "ack_ecn"])
        & (pl.col("pn_space") == "initial")
    ).sort("time_ms")
    if ack.is_empty():
        return None
    first = ack.row(0, named=True)
    sent = packets.filter(
        (pl.col("run_id") == run_id)
        & (pl.col("source") == "pcap")
        & (pl.col("vantage") == CLIENT_SIDE)
        & (pl.col("direction") == "c2s")
        & (pl.col("pn_space") == "initial")
        & (pl.col("packet_number") == first["largest_acked"])
    )
    if sent.is_empty():
        return None
    sample = first["time_ms"] - sent["time_ms"].min()
    return {
        "arrived_ms": first["time_ms"],
        "sample_ms": sample,
        "largest_acked": first["largest_acked"],
        "first_pto_ms": 3 * sample,
    }


def _warp(
    times: list[float], gap_cap_ms: float, unit_ms: float, lines: dict[float, int] | None = None
) -> tuple[dict[float, float], list[tuple[float, float, float]]]:
    """A monotone time → height mapping: every distinct event gets at least one step (more when
    an arrow with a multi-line label leaves there), short gaps add proportionally, long gaps
    (> gap_cap_ms) are cut to gap_cap_ms (returned as breaks)."""
    lines = lines or {}
    positions: dict[float, float] = {}
    breaks = []
    y = 0.0
    previous = None
    for t in sorted(set(times)):
        if previous is not None:
            gap = t - previous
            y += 1.0 + 0.3 * (max(lines.get(previous, 1), lines.get(t, 1)) - 1) + min(gap, gap_cap_ms) / unit_ms
            if gap > gap_cap_ms:
                breaks.append((y - 0.5 - min(gap, gap_cap_ms) / unit_ms / 2, gap, previous))
        positions[t] = y
        previous = t
    return positions, breaks


def _draw_sequence(
    ax: plt.Axes,
    run: dict,
    arrows: list[dict],
    rtt: dict | None,
    wait: tuple[float, float] | None,
    probes: list[float],
    title: str,
) -> None:
    times = [a["sent_ms"] for a in arrows] + [a["received_ms"] for a in arrows if a["received_ms"] is not None]
    if wait:
        times += list(wait)
    label_lines = {round(a["sent_ms"], 3): a["label"].count("\n") + 1 for a in arrows}
    positions, breaks = _warp([round(t, 3) for t in times], gap_cap_ms=12.0, unit_ms=6.0, lines=label_lines)

    def y(t: float) -> float:
        return positions[round(t, 3)]

    top, bottom = -1.0, max(positions.values()) + 1.5
    client_x, server_x = 0.0, 1.0
    for x, name in (
        (client_x, f"client ({run['client_impl']})"),
        (server_x, f"server ({run['server_impl']}, {run['mode'].upper()})"),
    ):
        ax.plot([x, x], [top, bottom], color="black", linewidth=1.2, zorder=1)
        ax.text(x, top - 0.3, name, ha="center", va="bottom", fontsize=8, fontweight="bold")
    for y_break, gap, _start in breaks:
        for x in (client_x, server_x):
            ax.plot([x - 0.025, x + 0.025], [y_break - 0.15, y_break + 0.15], color="white", linewidth=4, zorder=2)
            ax.plot([x - 0.025, x + 0.025], [y_break - 0.35, y_break - 0.05], color="black", linewidth=0.8, zorder=3)
            ax.plot([x - 0.025, x + 0.025], [y_break + 0.05, y_break + 0.35], color="black", linewidth=0.8, zorder=3)
        ax.text(
            0.5,
            y_break,
            f"(axis cut: {gap:.0f} ms without a datagram)",
            ha="center",
            va="center",
            fontsize=6,
            color="gray",
            style="italic",
        )
    if wait:
        start, end = wait
        ax.add_patch(
            Rectangle(
                (server_x - 0.03, y(start)),
                0.06,
                y(end) - y(start),
                facecolor="#f2d0d0",
                edgecolor="firebrick",
                hatch="///",
                zorder=2,
            )
        )
        ax.text(
            server_x + 0.14,
            (y(start) + y(end)) / 2,
            f"waits for the certificate\n(store delay Δt = {run['cert_delay_ms']:g} ms)\nClientHello → "
            f"ServerHello:\n{end - start:.1f} ms",
            ha="left",
            va="center",
            fontsize=6.5,
            color="firebrick",
        )
    for arrow in arrows:
        c2s = arrow["direction"] == "c2s"
        x0, x1 = (client_x, server_x) if c2s else (server_x, client_x)
        y0 = y(arrow["sent_ms"])
        lost = arrow["received_ms"] is None
        y1 = y0 + 1.0 if lost else y(arrow["received_ms"])
        probe = c2s and any(abs(arrow["sent_ms"] - p) < 1e-6 for p in probes)
        color = "crimson" if probe else ("tab:blue" if c2s else "tab:green")
        if lost:
            ax.annotate(
                "",
                xy=(x0 + (x1 - x0) * 0.6, y0 + 0.6),
                xytext=(x0, y0),
                arrowprops={"arrowstyle": "-", "color": color, "linestyle": "--"},
            )
            ax.text(x0 + (x1 - x0) * 0.62, y0 + 0.6, "✕ lost", color=color, fontsize=7, va="center")
        else:
            ax.annotate(
                "",
                xy=(x1, y1),
                xytext=(x0, y0),
                arrowprops={"arrowstyle": "-|>", "color": color, "linewidth": 1.0, "shrinkA": 0, "shrinkB": 0},
            )
        count = (
            f"{arrow['datagrams']} datagrams, {arrow['bytes']:,} B"
            if arrow["datagrams"] > 1
            else f"{arrow['bytes']:,} B"
        )
        label = ("PTO probe: " if probe else "") + arrow["label"] + f"  ({count})"
        ax.text(
            0.5, (y0 + y1) / 2, label, ha="center", va="center", fontsize=5.8, color=color, linespacing=1.15,
            bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85}, zorder=4,
        )
        ax.text(
            x0 + (-0.03 if c2s else 0.03),
            y0,
            f"{arrow['sent_ms']:.1f}",
            ha="right" if c2s else "left",
            va="center",
            fontsize=6,
            color="dimgray",
        )
        if not lost:
            ax.text(
                x1 + (0.03 if c2s else -0.03),
                y1,
                f"{arrow['received_ms']:.1f}",
                ha="left" if c2s else "right",
                va="center",
                fontsize=6,
                color="dimgray",
            )
    notes = []
    if probes:
        before_any_server = rtt is None or probes[0] < rtt["arrived_ms"]
        reason = "default PTO: no RTT sample yet" if before_any_server else "PTO from the first RTT sample"
        notes.append(f"client's first PTO expired at {probes[0]:.1f} ms ({reason})")
    if rtt:
        notes.append(
            f"first RTT sample {rtt['sample_ms']:.1f} ms (ACK of its Initial pn {rtt['largest_acked']}) → first PTO 3 "
            f"× {rtt['sample_ms']:.1f} = {rtt['first_pto_ms']:.1f} ms"
        )
        ax.plot([client_x - 0.05, client_x], [y(rtt["arrived_ms"])] * 2, color="purple", linewidth=2)
    ax.text(0.0, bottom + 0.4, "\n".join(notes), ha="left", va="top", fontsize=6.5, color="purple")
    ax.set_xlim(-0.3, 1.55)
    ax.set_ylim(bottom + 2.4, top - 1.2)
    ax.axis("off")
    ax.set_title(title, fontsize=8.5, loc="left")


def handshake_timeline_figure(
    runs: pl.DataFrame, packets: pl.DataFrame, frames: pl.DataFrame, iack_run_id: str, wfc_run_id: str
) -> plt.Figure:
    """Two sequence diagrams side by side, IACK and WFC, of two real runs: every datagram between
    the client-side (sim_left) and the server-side (sim_right) capture with its measured send and
    receive times (ms on one clock since the client's first datagram; time runs downwards, long
    idle gaps cut), its packets and frames; the server's wait for the certificate (ClientHello
    arrival to ServerHello departure), the client's PTO probes and first RTT sample."""
    setup_style()
    fig, axes = plt.subplots(1, 2, figsize=(12.5, 9.0))
    for ax, run_id, panel in zip(axes, (iack_run_id, wfc_run_id), ("(a)", "(b)"), strict=True):
        run = runs.filter(pl.col("run_id") == run_id).row(0, named=True)
        sequence = handshake_sequence(packets, frames, run_id)
        arrows = merge_bursts(sequence)
        first_sent = number(sequence.filter(pl.col("direction") == "c2s")["sent_ms"].min())
        first_flight = sequence.filter((pl.col("direction") == "c2s") & (pl.col("sent_ms") <= first_sent + BURST_MS))
        # The server can answer once the whole first flight (a split ClientHello: two datagrams) is in.
        hello_in = optional_number(first_flight["received_ms"].max())
        hello_out = optional_number(
            sequence.filter((pl.col("direction") == "s2c") & pl.col("server_hello"))["sent_ms"].min()
        )
        wait = (
            (hello_in, hello_out) if hello_in is not None and hello_out is not None and hello_out > hello_in else None
        )
        server_hello_arrival = optional_number(
            sequence.filter((pl.col("direction") == "s2c") & pl.col("server_hello"))["received_ms"].min()
        )
        probes = [
            a["sent_ms"] for a in arrows
            if a["direction"] == "c2s" and a["sent_ms"] > first_sent + BURST_MS
            and (server_hello_arrival is None or a["sent_ms"] < server_hello_arrival)
        ]
        title = (
            f"{panel} {run['mode'].upper()}: {run['scenario']}, RTT {run['rtt_ms']:g} ms, certificate "
            f"{run['cert_bytes']:,} B, Δt {run['cert_delay_ms']:g} ms\nrun {run_id}"
        )
        _draw_sequence(ax, run, arrows, first_rtt_sample(packets, frames, run_id), wait, probes, title)
    fig.legend(
        handles=[
            Patch(color="tab:blue", label="client → server"),
            Patch(color="tab:green", label="server → client"),
            Patch(color="crimson", label="client PTO probe (before the ServerHello arrived)"),
        ],
        loc="lower center", ncol=3, fontsize=7, frameon=False, bbox_to_anchor=(0.5, 0.015),
    )
    fig.text(
        0.5,
        0.985,
        "Times [ms] since the client's first datagram: left of the client = client-side capture, right of the server = "
        "server-side capture; bursts sent < 1 ms apart are one arrow",
        ha="center",
        va="top",
        fontsize=7,
        color="dimgray",
    )
    fig.tight_layout(rect=(0, 0.035, 1, 0.97))
    return fig


# ------------------------------------------------------------------------------------------------
# Fig. 3: packet coalescence per client


def _parse_content(content: str) -> list[tuple[str, str]]:
    """'initial[ack,crypto]+handshake[crypto]' → [('initial', 'ACK CRYPTO'), ('handshake', 'CRYPTO')]."""
    parts = []
    for packet in content.split("+"):
        kind, _, rest = packet.partition("[")
        frame_list = [FRAME_NAMES.get(f, f.upper()) for f in rest.rstrip("]").split(",") if f]
        parts.append((kind, " ".join(dict.fromkeys(frame_list)) or "–"))
    return parts


@placeholder_when_missing
def imc24_fig03_coalescence(
    runs: pl.DataFrame, packets: RunRows, frames: RunRows, scenario: str = "noloss"
) -> Rendered:
    """Per client (rows) and mode (IACK left, WFC right): the handshake datagrams of the usual
    pattern over the ``scenario`` runs, client→server on the upper lane and server→client on the
    lower, each datagram a box split into its QUIC packets (colour = packet type, text = frame
    types); "k/n" under a box when only k of the n runs showed that content."""
    selected = require_runs(runs.filter(pl.col("scenario") == scenario), f"of scenario '{scenario}'")
    patterns = coalescence_patterns(runs, packets, frames, scenario)
    if patterns.is_empty():  # e.g. runs recorded with the client's qlog only (the embedded quiche runs)
        raise MissingData(f"no ok run of scenario '{scenario}' with a capture of its handshake at the sending side "
                          f"of the link ({plural(selected.height, 'run')} of it in the dataset, none captured there)")
    setup_style()
    clients = sorted(patterns["client_impl"].unique().to_list())
    uncaptured = sorted(set(selected.filter(pl.col("status") == "ok")["client_impl"].drop_nulls()) - set(clients))
    modes = [m for m in ("iack", "wfc") if m in patterns["mode"].unique().to_list()]
    width, gap = 1.0, 0.18
    most = max(integer(patterns["datagram_index"].max()), 1)
    half = most * (width + gap) + 0.9
    fig, axes = plt.subplots(len(clients), 1, figsize=(2.0 + 2 * half * 0.95, 1.55 * len(clients) + 0.9), squeeze=False)
    lanes = {"c2s": 1.15, "s2c": 0.0}
    for ax, client in zip(axes[:, 0], clients, strict=True):
        for m, mode in enumerate(modes):
            x_origin = m * half + 0.9
            if m:
                ax.axvline(m * half + 0.2, color="gray", linewidth=0.8, linestyle=":")
            for direction, lane_y in lanes.items():
                rows = patterns.filter(
                    (pl.col("client_impl") == client) & (pl.col("mode") == mode) & (pl.col("direction") == direction)
                ).sort("datagram_index")
                ax.text(
                    x_origin - 0.08,
                    lane_y + 0.45,
                    "C→S" if direction == "c2s" else "S→C",
                    ha="right",
                    va="center",
                    fontsize=7,
                    color="dimgray",
                )
                for row in rows.iter_rows(named=True):
                    x = x_origin + (row["datagram_index"] - 1) * (width + gap)
                    parts = _parse_content(row["content"])
                    height = 0.9 / len(parts)
                    for p, (kind, frame_text) in enumerate(parts):
                        y0 = lane_y + 0.9 - (p + 1) * height
                        ax.add_patch(
                            Rectangle(
                                (x, y0),
                                width,
                                height,
                                facecolor=PACKET_COLORS.get(kind, "#dddddd"),
                                edgecolor="black",
                                linewidth=0.6,
                            )
                        )
                        ax.text(x + width / 2, y0 + height / 2, frame_text, ha="center", va="center", fontsize=5.6)
                    ax.add_patch(Rectangle((x, lane_y), width, 0.9, facecolor="none", edgecolor="black", linewidth=1.3))
                    ax.text(
                        x + 0.03,
                        lane_y + 0.9,
                        f"#{row['datagram_index']}",
                        ha="left",
                        va="bottom",
                        fontsize=5.5,
                        color="dimgray",
                    )
                    if row["runs_with_pattern"] < row["runs"]:
                        ax.text(
                            x + width - 0.03,
                            lane_y + 0.9,
                            f"{row['runs_with_pattern']}/{row['runs']} runs",
                            ha="right",
                            va="bottom",
                            fontsize=5.2,
                            color="firebrick",
                        )
            if client == clients[0]:
                ax.set_title("")
                ax.text(x_origin, 2.35, mode.upper(), fontsize=9, fontweight="bold", va="bottom")
        ax.text(0.0, 1.0, client, fontsize=9, fontweight="bold", ha="left", va="center", rotation=90)
        ax.set_xlim(-0.15, len(modes) * half + 0.2)
        ax.set_ylim(-0.1, 2.3 if client != clients[0] else 2.75)
        ax.axis("off")
    runs_per = patterns.group_by("client_impl", "mode").agg(pl.col("runs").max())["runs"]
    fig.legend(
        handles=[
            Patch(facecolor=c, edgecolor="black", label=PACKET_NAMES[k])
            for k, c in PACKET_COLORS.items()
            if k in {kind for content in patterns["content"].to_list() for kind, _ in _parse_content(content)}
        ],
        loc="lower center",
        ncol=4,
        fontsize=7,
        frameon=False,
        bbox_to_anchor=(0.5, 0.0),
    )
    fig.suptitle(
        "Handshake datagrams per client: QUIC packets (colour) and their frames, most frequent pattern over "
        f"{integer(runs_per.min())}–{integer(runs_per.max())} '{scenario}' runs per client and mode; #n = datagram "
        "index per direction",
        fontsize=8,
    )
    fig.tight_layout(rect=(0, 0.04, 1, 0.97))
    not_drawn = f" Not drawn (no capture of their handshake): {', '.join(uncaptured)}." if uncaptured else ""
    return Rendered(fig, selected, note=f"Scenario '{scenario}'.{not_drawn}")


def _captured_at_both_ends(packets: pl.DataFrame) -> pl.DataFrame:
    """The runs with packets captured at both the client-side and the server-side capture point."""
    return (
        packets.filter((pl.col("source") == "pcap") & pl.col("vantage").is_in([CLIENT_SIDE, SERVER_SIDE]))
        .group_by("run_id")
        .agg(pl.col("vantage").n_unique().alias("ends"))
        .filter(pl.col("ends") == 2)
        .select("run_id")
    )


@placeholder_when_missing
def imc24_fig01_handshake_timeline(
    handshakes: pl.DataFrame,
    runs: pl.DataFrame,
    packets: RunRows,
    frames: RunRows,
    client: str = "aioquic",
    scenario: str = "amplification",
    rtt_ms: float = 9.0,
) -> Rendered:
    """Fig. 1: the IACK and the WFC run of one configuration, each the repetition nearest its
    configuration's median TTFB among the runs captured at both ends of the link (a sequence diagram
    needs both; repetitions kept client side only are left out), as sequence diagrams
    (``handshake_timeline_figure``); the footnote names them and counts the configuration's runs."""
    candidates = configuration_runs(handshakes, client, scenario, rtt_ms).select("run_id")
    both_ends = per_run_batches(_captured_at_both_ends, candidates["run_id"], packets)
    drawable = handshakes.join(both_ends, on="run_id", how="semi")
    iack_run = representative_run(drawable, client, scenario, "iack", rtt_ms)
    wfc_run = representative_run(drawable, client, scenario, "wfc", rtt_ms)
    drawn = [iack_run, wfc_run]
    return Rendered(
        handshake_timeline_figure(runs, rows_of_runs(packets, drawn), rows_of_runs(frames, drawn), iack_run, wfc_run),
        configuration_runs(handshakes, client, scenario, rtt_ms),
        note=f"Drawn: {iack_run} and {wfc_run} (median TTFB of their configuration's runs captured at both ends).",
    )
