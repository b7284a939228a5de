"""imc24 Table 2 from the measurements: per scenario, which mode had the lower median TTFB and by
how much — computed, never typed in; ``guidelines_table`` puts the configurations into the
paper's cells (certificate vs anti-amplification limit × loss / Δt vs 3·RTT)."""

from __future__ import annotations

import polars as pl

from quicack.layout.vantage import SIM_LEFT
from quicack.metrics.summary import (
    TTFB_CAPTURE,
    TTFB_LABEL,
    TTFB_QLOG,
    iack_wfc_runs,
    mode_difference,
    stack_delay_runs,
)
from quicack.storage.run_batches import RunRows, per_run_batches

# A margin below this is within run-to-run jitter of the testbed: reported as a tie.
TIE_MS = 1.0


def guidelines(handshakes: pl.DataFrame, ttfb_column: str = "ttfb_capture_ms") -> pl.DataFrame:
    """Per (scenario, RTT, client) the mode with the lower median TTFB and the margin, and per
    scenario the mode most configurations prefer. The client-side capture TTFB is the default
    because it exists for every client (quinn's qlog has no frames)."""
    medians = mode_difference(handshakes, ttfb_column, ["client_impl", "scenario", "rtt_ms"])
    per_configuration = medians.filter(pl.col("wfc_minus_iack").is_not_null()).select(
        "client_impl", "scenario", "rtt_ms", pl.col("iack_median").alias("iack"), pl.col("wfc_median").alias("wfc"),
        "iack_runs", "wfc_runs", pl.col("wfc_minus_iack").alias("iack_advantage_ms"),
    ).with_columns(
        pl.when(pl.col("iack_advantage_ms").abs() < TIE_MS)
        .then(pl.lit("tie"))
        .when(pl.col("iack_advantage_ms") > 0)
        .then(pl.lit("iack"))
        .otherwise(pl.lit("wfc"))
        .alias("preferred")
    )
    return per_configuration.sort("scenario", "rtt_ms", "client_impl")


def _cells(per_configuration: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Per ``keys``: how many configurations prefer each mode, the median margin (WFC − IACK
    median TTFB; positive = IACK faster) and the preferred mode: 'tie' when the median margin is
    below ``TIE_MS``, else the mode most configurations prefer."""
    return (
        per_configuration.group_by(keys)
        .agg(
            (pl.col("preferred") == "iack").sum().alias("configurations_iack"),
            (pl.col("preferred") == "wfc").sum().alias("configurations_wfc"),
            (pl.col("preferred") == "tie").sum().alias("configurations_tie"),
            pl.col("iack_advantage_ms").median().alias("median_iack_advantage_ms"),
        )
        .with_columns(
            # A cell whose median margin is within jitter prefers neither mode, whatever the
            # per-configuration counts say.
            pl.when(pl.col("median_iack_advantage_ms").abs() < TIE_MS)
            .then(pl.lit("tie"))
            .when(pl.col("configurations_iack") > pl.col("configurations_wfc"))
            .then(pl.lit("iack"))
            .when(pl.col("configurations_wfc") > pl.col("configurations_iack"))
            .then(pl.lit("wfc"))
            .otherwise(pl.lit("tie"))
            .alias("preferred")
        )
        .sort(keys)
    )


def guidelines_by_scenario(handshakes: pl.DataFrame, ttfb_column: str = "ttfb_capture_ms") -> pl.DataFrame:
    """Per scenario, Table 2's decision over its (client, RTT) configurations (see ``_cells``)."""
    return _cells(guidelines(handshakes, ttfb_column), ["scenario"])


# imc24 Table 2 (Appendix C): rows = the certificate vs the server's anti-amplification limit;
# columns = loss of the first server flight except its first datagram, loss of the second client
# flight, no loss with Δt below / above the client's first PTO (3·RTT). The paper's cells:
# data/reference/imc24_tab02.csv (same labels).
BELOW, ABOVE = "below amplification limit", "above amplification limit"
SERVER_FLIGHT_LOST = "loss: first server flight except first datagram"
CLIENT_FLIGHT_LOST = "loss: second client flight"
SHORT_DELAY = "no loss, Δt < 3·RTT"
LONG_DELAY = "no loss, Δt ≥ 3·RTT"
CERTIFICATE_ROWS = (BELOW, ABOVE)
CONDITION_COLUMNS = (SERVER_FLIGHT_LOST, CLIENT_FLIGHT_LOST, SHORT_DELAY, LONG_DELAY)
# RFC 9000 §8.1: before validating the address a server sends at most 3× the bytes it received.
AMPLIFICATION_FACTOR = 3
MIN_INITIAL_DATAGRAM_BYTES = 1200
CLIENT_SIDE = SIM_LEFT
# The client's first flight (one or two datagrams) leaves in one burst (as in metrics.handshake).
FIRST_FLIGHT_BURST_MS = 1.0


def first_flight_bytes(datagrams: pl.DataFrame) -> pl.DataFrame:
    """Per run: the UDP payload bytes of the client's first flight at the client-side capture."""
    return (
        datagrams.filter(
            (pl.col("vantage") == CLIENT_SIDE)
            & (pl.col("direction") == "c2s")
            & (pl.col("time_ms") <= FIRST_FLIGHT_BURST_MS)
        )
        .group_by("run_id")
        .agg(pl.col("udp_payload_bytes").sum().alias("first_flight_bytes"))
    )


def amplification_limits(datagrams: RunRows | None, runs: pl.DataFrame) -> pl.DataFrame:
    """Per client: the server's anti-amplification budget before the client's second flight, 3×
    the UDP payload of the client's first flight at the client-side capture (median over its
    runs; a ClientHello split over two datagrams doubles it). Without captures: 3 × 1200 B."""
    clients = runs.select("client_impl").unique()
    default = clients.with_columns(
        pl.lit(float(AMPLIFICATION_FACTOR * MIN_INITIAL_DATAGRAM_BYTES)).alias("amplification_limit_bytes")
    )
    if datagrams is None:
        return default
    first_flight = (
        per_run_batches(first_flight_bytes, runs["run_id"], datagrams)
        .join(runs.select("run_id", "client_impl"), on="run_id", how="inner")
        .group_by("client_impl")
        .agg((pl.col("first_flight_bytes").median() * AMPLIFICATION_FACTOR).alias("amplification_limit_bytes"))
    )
    return default.join(first_flight, on="client_impl", how="left", suffix="_measured").select(
        "client_impl",
        pl.coalesce("amplification_limit_bytes_measured", "amplification_limit_bytes").alias(
            "amplification_limit_bytes"
        ),
    )


def classify_configurations(
    runs: pl.DataFrame, datagrams: RunRows | None = None, held: bool | None = None
) -> pl.DataFrame:
    """Per (client, scenario, RTT) of the IACK/WFC runs of one server stack delay (``held`` to the paper's, this
    machine's own, or None: as the dataset holds them, ``summary.stack_delay_runs``): Table 2's row (certificate
    bytes vs the client's amplification limit) and column (what the runs dropped — server datagrams after the first:
    server flight; client datagrams: second client flight; nothing: Δt = cert_delay_ms vs 3·RTT). Configurations
    whose runs disagree on these, or drop the first server datagram, get a null column (not classified)."""
    # A content rule (drop_to_server_rule) drops whichever datagrams carry the flight, so its runs' lists differ
    # by design: the rule is what must be consistent.
    rule = pl.col("drop_to_server_rule") if "drop_to_server_rule" in runs.columns else pl.lit(None, dtype=pl.Utf8)
    # One stack delay per table: runs with the ServerHello held to the paper's and this machine's own never mix.
    paired = iack_wfc_runs(stack_delay_runs(runs, held)).with_columns(
        pl.when(rule.is_not_null())
        .then(pl.lit("rule ") + rule)
        .otherwise(pl.col("drop_to_server"))
        .alias("drop_to_server")
    )
    # Drop lists are calibrated per mode (IACK's server flight has one datagram more): each mode
    # of a configuration must drop one list consistently, and the modes must drop the same side.
    per_mode = paired.group_by("client_impl", "scenario", "rtt_ms", "mode").agg(
        pl.col("cert_bytes").max().alias("cert_bytes"),
        (pl.col("cert_bytes").n_unique() == 1).alias("one_cert"),
        pl.col("cert_delay_ms").max().alias("cert_delay_ms"),
        (pl.col("cert_delay_ms").n_unique() == 1).alias("one_delay"),
        (pl.col("drop_to_client").fill_null("").n_unique() == 1).alias("one_server_drop"),
        (pl.col("drop_to_server").fill_null("").n_unique() == 1).alias("one_client_drop"),
        pl.col("drop_to_client").fill_null("").first().alias("server_drop"),
        pl.col("drop_to_server").fill_null("").first().alias("client_drop"),
    )
    attributes = per_mode.group_by("client_impl", "scenario", "rtt_ms").agg(
        pl.col("cert_bytes").max(),
        (pl.col("one_cert").all() & (pl.col("cert_bytes").n_unique() == 1)).alias("one_cert"),
        pl.col("cert_delay_ms").max(),
        (pl.col("one_delay").all() & (pl.col("cert_delay_ms").n_unique() == 1)).alias("one_delay"),
        pl.col("one_server_drop").all(),
        pl.col("one_client_drop").all(),
        (pl.col("server_drop") != "").unique().alias("server_drops"),
        (pl.col("client_drop") != "").unique().alias("client_drops"),
        pl.col("server_drop").str.split("_").list.contains("1").any().alias("first_server_datagram_dropped"),
    )
    server_drops = pl.col("server_drops").list.first()
    client_drops = pl.col("client_drops").list.first()
    consistent = (
        pl.col("one_cert") & pl.col("one_delay") & pl.col("one_server_drop") & pl.col("one_client_drop")
        & (pl.col("server_drops").list.len() == 1) & (pl.col("client_drops").list.len() == 1)
    )
    column = (
        pl.when(~consistent | pl.col("first_server_datagram_dropped") | (server_drops & client_drops))
        .then(pl.lit(None, dtype=pl.Utf8))
        .when(server_drops)
        .then(pl.lit(SERVER_FLIGHT_LOST))
        .when(client_drops)
        .then(pl.lit(CLIENT_FLIGHT_LOST))
        .when(pl.col("cert_delay_ms").fill_null(0.0) < 3 * pl.col("rtt_ms"))
        .then(pl.lit(SHORT_DELAY))
        .otherwise(pl.lit(LONG_DELAY))
    )
    return (
        attributes.join(amplification_limits(datagrams, runs), on="client_impl", how="left")
        .with_columns(
            pl.when(pl.col("cert_bytes") > pl.col("amplification_limit_bytes"))
            .then(pl.lit(ABOVE))
            .otherwise(pl.lit(BELOW))
            .alias("certificate"),
            column.alias("condition"),
        )
        .select(
            "client_impl",
            "scenario",
            "rtt_ms",
            "cert_bytes",
            "cert_delay_ms",
            "amplification_limit_bytes",
            "certificate",
            "condition",
        )
        .sort("scenario", "rtt_ms", "client_impl")
    )


# Table 2's TTFB per configuration (client, scenario, RTT): the client-side capture's where any of its runs has one
# (the embedded dataset's), else the client qlog's (the dataset 'paper' keeps the client's qlog alone, what imc24
# analysed). A configuration's two modes are recorded alike, so its margin compares one source with itself.
COMPARED_TTFB = "ttfb_compared_ms"
CONFIGURATION_KEYS = ["client_impl", "scenario", "rtt_ms"]


def with_compared_ttfb(handshakes: pl.DataFrame) -> pl.DataFrame:
    """``handshakes`` with ``COMPARED_TTFB`` and ``ttfb_source`` (its label, ``summary.TTFB_LABEL``) per run."""
    captured = pl.col(TTFB_CAPTURE).is_not_null().any().over(CONFIGURATION_KEYS)
    return handshakes.with_columns(
        pl.when(captured).then(pl.col(TTFB_CAPTURE)).otherwise(pl.col(TTFB_QLOG)).alias(COMPARED_TTFB),
        pl.when(captured)
        .then(pl.lit(TTFB_LABEL[TTFB_CAPTURE]))
        .otherwise(pl.lit(TTFB_LABEL[TTFB_QLOG]))
        .alias("ttfb_source"),
    )


def compared_configurations(
    handshakes: pl.DataFrame,
    runs: pl.DataFrame,
    datagrams: RunRows | None = None,
    ttfb_column: str | None = None,
    held: bool | None = None,
) -> pl.DataFrame:
    """The (client, scenario, RTT) configurations of one stack delay (``held``; see ``classify_configurations``) that
    enter a Table 2 cell: both modes measured (``guidelines``, on ``ttfb_column``, by default each configuration's
    ``COMPARED_TTFB``, named in ``ttfb_source``) and classified into a row and column (``classify_configurations``)."""
    if ttfb_column is None:
        compared = with_compared_ttfb(handshakes)
        sources = compared.group_by(CONFIGURATION_KEYS).agg(pl.col("ttfb_source").first())
        measured = guidelines(compared, COMPARED_TTFB).join(sources, on=CONFIGURATION_KEYS, how="left")
    else:
        measured = guidelines(handshakes, ttfb_column).with_columns(ttfb_source=pl.lit(TTFB_LABEL[ttfb_column]))
    return measured.join(
        classify_configurations(runs, datagrams, held), on=CONFIGURATION_KEYS, how="inner"
    ).filter(pl.col("condition").is_not_null())


def guidelines_table(
    handshakes: pl.DataFrame,
    runs: pl.DataFrame,
    paper: pl.DataFrame,
    datagrams: RunRows | None = None,
    ttfb_column: str | None = None,
    held: bool | None = None,
) -> pl.DataFrame:
    """imc24 Table 2's eight cells from the measured (client, scenario, RTT) configurations (see
    ``classify_configurations``): per cell the decision of ``_cells``, the paper's preference
    (``paper``: certificate, condition, preferred — reference.paper_table('imc24', 'tab02')) and
    where the cell was measured; ``configurations`` = 0 where the data has no such configuration
    (not measured: never a guess)."""
    per_configuration = compared_configurations(handshakes, runs, datagrams, ttfb_column, held)
    cells = _cells(per_configuration, ["certificate", "condition"])
    where = (
        per_configuration.group_by("certificate", "condition", "scenario")
        .agg(pl.col("rtt_ms").unique().sort(), pl.col("client_impl").n_unique().alias("clients"))
        .sort("scenario")
        .with_columns(
            (
                pl.col("scenario")
                + " @ "
                + pl.col("rtt_ms")
                .cast(pl.List(pl.Utf8))
                .list.eval(pl.element().str.replace(r"\.0$", ""))
                .list.join("/")
                + " ms × "
                + pl.col("clients").cast(pl.Utf8)
                + " clients"
            ).alias("measured_in")
        )
        .group_by("certificate", "condition", maintain_order=True)
        .agg(pl.col("measured_in").str.join("; "))
    )
    layout = pl.DataFrame(
        [
            {"certificate": row, "condition": column, "order": i}
            for i, (row, column) in enumerate((r, c) for r in CERTIFICATE_ROWS for c in CONDITION_COLUMNS)
        ]
    ).join(
        paper.select("certificate", "condition", pl.col("preferred").alias("paper_preferred")),
        on=["certificate", "condition"],
        how="left",
    )
    uncovered = layout.filter(pl.col("paper_preferred").is_null())
    if not uncovered.is_empty():
        raise ValueError(f"the paper's Table 2 has no cell for {uncovered.select('certificate', 'condition').rows()}")
    counts = ["configurations_iack", "configurations_wfc", "configurations_tie"]
    return (
        layout.join(cells, on=["certificate", "condition"], how="left")
        .join(where, on=["certificate", "condition"], how="left")
        .with_columns([pl.col(c).fill_null(0).cast(pl.Int64) for c in counts])
        .with_columns(pl.sum_horizontal(counts).alias("configurations"))
        .sort("order")
        .drop("order")
    )


def guidelines_beside_paper(
    handshakes: pl.DataFrame,
    runs: pl.DataFrame,
    paper: pl.DataFrame,
    datagrams: RunRows | None = None,
    held: bool | None = None,
) -> pl.DataFrame:
    """Table 2's eight cells as printed: the paper's preference, ours in words (winner and margin,
    or 'tie', with the configuration counts; 'not measured' where the data has no such
    configuration), whether they agree, and the numbers behind ours."""
    table = guidelines_table(handshakes, runs, paper, datagrams, held=held)

    # Eight rows: Python's number formatting here keeps the printed cells exactly as they were.
    def ours(row: dict) -> str:
        if row["configurations"] == 0:
            return "not measured"
        mode = row["preferred"]
        margin = row["median_iack_advantage_ms"]
        counts = (
            f"{row['configurations_iack']} IACK / {row['configurations_wfc']} WFC / {row['configurations_tie']} tie"
        )
        if mode == "tie":
            return f"tie (median margin {margin:+.1f} ms; {counts})"
        winner = "IACK" if mode == "iack" else "WFC"
        return f"{winner} by {abs(margin):.1f} ms ({counts})"

    def agrees(row: dict) -> str:
        if row["configurations"] == 0:
            return "n/a"
        return "yes" if row["preferred"] == row["paper_preferred"] else "no"

    rows = table.to_dicts()
    return pl.DataFrame(
        {
            "certificate": [r["certificate"] for r in rows],
            "condition": [r["condition"] for r in rows],
            "paper": [r["paper_preferred"].upper() for r in rows],
            "ours": [ours(r) for r in rows],
            "agrees": [agrees(r) for r in rows],
            "median_iack_advantage_ms": [r["median_iack_advantage_ms"] for r in rows],
            "configurations": [r["configurations"] for r in rows],
            "measured_in": [r["measured_in"] or "-" for r in rows],
        }
    )


def guideline_runs(
    handshakes: pl.DataFrame, runs: pl.DataFrame, datagrams: RunRows | None = None, held: bool | None = None
) -> pl.DataFrame:
    """The IACK/WFC runs of the configurations that enter a Table 2 cell (both modes measured and
    classified into a row and column; one stack delay, ``held``: see ``classify_configurations``). Here, not in
    ``metrics.selection``: the figures that import ``selection`` need not re-render when Table 2's rules change."""
    compared = compared_configurations(handshakes, runs, datagrams, held=held).select(CONFIGURATION_KEYS)
    return iack_wfc_runs(runs).join(compared, on=CONFIGURATION_KEYS, how="semi")
