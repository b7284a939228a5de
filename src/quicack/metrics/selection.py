"""Which runs each imc24 figure, table and claim reads: one home per selection, so that a figure, its
footnote's run counts and the claims built on the same numbers cannot disagree. Every selection
keeps failed runs (they are counted in the footnotes, never drawn)."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from quicack.layout.naming import PAPER_CONDITIONS_SUFFIX
from quicack.markup import plural
from quicack.metrics.summary import iack_wfc_runs, ttfb_column


class MissingData(LookupError):
    """The dataset does not hold what an artefact is drawn from (a scenario, a test case, a metric); the
    message says what. A render function raises it before drawing; the artefact becomes a placeholder that
    says so, and the pipeline goes on (``strict: true`` turns it into a failure)."""


def require_runs(runs: pl.DataFrame, what: str, metric: str | None = None, keys: Sequence[str] = ()) -> pl.DataFrame:
    """``runs`` unchanged when at least one is ok (with ``metric`` measured, if given, and the run parameters
    ``keys`` known), else MissingData naming ``what`` was looked for and, when ok runs lack a parameter, which
    run.json key would fill it."""
    usable = runs.filter(pl.col("status") == "ok")
    if metric is not None:
        usable = usable.filter(pl.col(metric).is_not_null())
    if keys and not usable.is_empty():
        lacking = [key for key in keys if usable[key].null_count() == usable.height]
        if lacking:
            said = ", ".join(repr(key) for key in lacking)
            raise MissingData(
                f"no ok run {what} says its {said}: the {usable.height} ok run(s) of it lack run.json key(s) {said}"
            )
    if usable.is_empty():
        measured = f" with {metric}" if metric is not None else ""
        raise MissingData(f"no ok run{measured} {what} ({plural(runs.height, 'run')} of it in the dataset)")
    return runs


# Scenarios whose emulated loss (if any) comes after the client's first RTT sample: the server's
# ACK of the ClientHello reaches the client before the second client flight is sent and lost.
FIRST_SAMPLE_UNAFFECTED = ("noloss", "drop_client_flight")


def as_recorded(handshakes: pl.DataFrame, scenario: str) -> str:
    """``scenario`` as the dataset holds it: its runs under the paper's conditions (``<scenario>_paper``,
    quicack.layout.PAPER_CONDITIONS_SUFFIX) where there are any, else the scenario itself (this machine's)."""
    paper = scenario + PAPER_CONDITIONS_SUFFIX
    return paper if handshakes.filter(pl.col("scenario") == paper).height else scenario


def ttfb_metric(handshakes: pl.DataFrame, scenario: str) -> str:
    """The TTFB column ``scenario``'s runs are compared on: the client qlog's where none of its runs has a capture's
    (the dataset 'paper' keeps the client's qlog alone, what imc24 analysed, under the paper's conditions and on this
    machine's own stack delay alike), else the client-side capture's (the embedded dataset's)."""
    return ttfb_column(handshakes.filter(pl.col("scenario") == scenario))


def scenario_runs(handshakes: pl.DataFrame, scenario: str, rtt_ms: float | None = None) -> pl.DataFrame:
    """IACK or WFC runs of ``scenario`` (and of ``rtt_ms`` if given) as the dataset holds it (``as_recorded``:
    under the paper's conditions where it has them): the TTFB figures' runs."""
    where = pl.col("scenario") == as_recorded(handshakes, scenario)
    if rtt_ms is not None:
        where &= pl.col("rtt_ms") == rtt_ms
    return iack_wfc_runs(handshakes).filter(where)


def configuration_runs(handshakes: pl.DataFrame, client: str, scenario: str, rtt_ms: float) -> pl.DataFrame:
    """IACK and WFC runs of one client, scenario and RTT (Fig. 1 draws one of each)."""
    return scenario_runs(handshakes, scenario, rtt_ms).filter(pl.col("client_impl") == client)


def representative_run(
    handshakes: pl.DataFrame, client: str, scenario: str, mode: str, rtt_ms: float, metric: str = "ttfb_capture_ms"
) -> str:
    """The ok run of a configuration whose ``metric`` is closest to the configuration's median
    (the lower repetition on a tie)."""
    runs = configuration_runs(handshakes, client, scenario, rtt_ms).filter(
        (pl.col("mode") == mode) & (pl.col("status") == "ok") & pl.col(metric).is_not_null()
    )
    if runs.is_empty():
        raise MissingData(
            f"no ok run with {metric} of client {client}, scenario '{scenario}', {mode.upper()}, RTT {rtt_ms:g} ms"
        )
    median = runs[metric].median()
    return runs.with_columns((pl.col(metric) - median).abs().alias("distance")).sort("distance", "repetition")[
        "run_id"
    ][0]


def pto_runs(handshakes: pl.DataFrame, scenarios: Sequence[str] = FIRST_SAMPLE_UNAFFECTED) -> pl.DataFrame:
    """IACK/WFC runs of ``scenarios``: the first-PTO improvement (Fig. 16 and its claim)."""
    return iack_wfc_runs(handshakes).filter(pl.col("scenario").is_in(list(scenarios)))


# The Δt sweep (imc24 Fig. 4 measured): no loss, small certificate, Δt = 0 (`noloss`) or the scenario's Δt
# (`noloss_delay_<Δt>ms`, quicack.testbed.scenarios).
DELAY_SWEEP_BASELINE = "noloss"
DELAY_SWEEP_PREFIX = "noloss_delay_"


def delay_sweep_runs(handshakes: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """IACK/WFC runs of the Δt sweep (``noloss`` and ``noloss_delay_<Δt>ms``), with each run's Δt
    (``cert_delay_ms``, from ``runs``): the measured sweet spot (Fig. 4 measured) and its claims."""
    sweep = (pl.col("scenario") == DELAY_SWEEP_BASELINE) | pl.col("scenario").str.starts_with(DELAY_SWEEP_PREFIX)
    return iack_wfc_runs(handshakes).filter(sweep).join(runs.select("run_id", "cert_delay_ms"), on="run_id", how="left")


# imc24 Table 4's second column: the runs that lose the second client flight by the client's static mapping.
SECOND_FLIGHT_SCENARIO = "drop_client_flight"


def second_flight_runs(handshakes: pl.DataFrame) -> pl.DataFrame:
    """The runs of the second-client-flight loss scenario (small certificate, static mapping): Table 4's
    second-flight column and its claims. The ``*_large``/``*_xlarge`` variants drop the client's Finished
    flight found per group instead, and other scenarios calibrate no client flight of their own."""
    return handshakes.filter(pl.col("scenario") == SECOND_FLIGHT_SCENARIO)


def rtt_sample_runs(
    handshakes: pl.DataFrame, rtt_ms: float = 100.0, scenario: str = "transfer", mode: str = "wfc"
) -> pl.DataFrame:
    """The 10 MB transfers behind Fig. 11."""
    return iack_wfc_runs(handshakes).filter(
        (pl.col("scenario") == scenario) & (pl.col("mode") == mode) & (pl.col("rtt_ms") == rtt_ms)
    )


def table3_runs(runs: pl.DataFrame, scenario: str = "handshake", fallback_scenario: str = "noloss") -> pl.DataFrame:
    """The ok runs Table 3 reads, per (server, mode): those of ``scenario`` (the QIR test case the
    paper used; the servers as released) if that server has any, else those of ``fallback_scenario``
    (the IACK/WFC server's no-loss runs in its modes). Another (server, mode) has no row: the aioquic
    server's IACK runs of the ACK-ratio study say nothing about a handshake. Adds ``table3_scenario``."""
    ok = runs.filter(pl.col("status") == "ok")
    keys = ["server_impl", "mode"]
    available = ok.group_by(keys).agg(
        (pl.col("scenario") == scenario).any().alias("has_primary"),
        (pl.col("scenario") == fallback_scenario).any().alias("has_fallback"),
    )
    chosen = available.with_columns(
        pl.when(pl.col("has_primary"))
        .then(pl.lit(scenario))
        .when(pl.col("has_fallback"))
        .then(pl.lit(fallback_scenario))
        .otherwise(pl.lit(None, dtype=pl.Utf8))
        .alias("table3_scenario")
    ).select(*keys, "table3_scenario")
    joined = ok.join(chosen, on=keys, how="left", nulls_equal=True)
    return joined.filter(pl.col("scenario") == pl.col("table3_scenario"))


def table3_accounted_runs(runs: pl.DataFrame) -> pl.DataFrame:
    """Every run of the scenarios Table 3 reads, failed ones included (its footnote counts them)."""
    return runs.filter(pl.col("scenario").is_in(table3_runs(runs)["scenario"].unique().to_list()))


# A default ACK policy shows only over many packets (go-x-net acknowledges every 2nd packet for the first 100,
# then every 10th): transfers of at least this size.
ACK_POLICY_MIN_FILE_BYTES = 1_000_000


def default_ack_policy_runs(runs: pl.DataFrame) -> pl.DataFrame:
    """Transfers of at least 1 MB whose receiver (the client) kept its implementation's default ACK policy
    (no ACK ratio or delay configured): ackfreq22 Table 2's measured columns."""
    return runs.filter(
        (pl.col("file_bytes") >= ACK_POLICY_MIN_FILE_BYTES)
        & pl.col("ack_ratio").is_null()
        & pl.col("ack_delay_ms").is_null()
        & pl.col("ack_delay_rtt_fraction").is_null()
        & pl.col("ack_reordering").is_null()
    )


# rethink and tcpquic (../shared/ACKRATIO.md): 10 MB downloads over the emulated satellite path, the client as the
# receiver at AR 1:2 or 1:10 (TCP: Linux's delayed ACKs, 1:10 by ACK thinning in the router); with 1 % loss 2 MB.
RETHINK_PROFILE = "rethink-satellite"
RETHINK_LOSS_PROFILE = "rethink-satellite-loss1"
RETHINK_RETURN100K_PROFILE = "rethink-satellite-return100k"
RETHINK_ACK_RATIOS = (2, 10)
RETHINK_FILE_BYTES = 10 * 1024 * 1024
TCP_IMPL = "linux-tcp"
# Linux's delayed ACKs acknowledge every second full-sized segment: a TCP run without a configured ACK ratio is AR 1:2.
TCP_DEFAULT_ACK_RATIO = 2


def with_receiver_ack_ratio(runs: pl.DataFrame) -> pl.DataFrame:
    """``runs`` with ``receiver_ack_ratio``: the configured ACK ratio, Linux TCP's 2 where none is set, and
    ``protocol`` ('tcp' for the Linux TCP runs, else 'quic')."""
    is_tcp = pl.col("client_impl") == TCP_IMPL
    return runs.with_columns(
        pl.when(is_tcp).then(pl.lit("tcp")).otherwise(pl.lit("quic")).alias("protocol"),
        pl.when(is_tcp & pl.col("ack_ratio").is_null())
        .then(pl.lit(TCP_DEFAULT_ACK_RATIO, dtype=pl.Int64))
        .otherwise(pl.col("ack_ratio"))
        .alias("receiver_ack_ratio"),
    )


# The papers' browsers, which run with their own fixed ACK policies (quicack.testbed.browsers): Chromium (rethink's
# Chromium, ackfreq22's Chrome 90) and Firefox (ackfreq22's Firefox 78, QUIC by neqo).
BROWSER_RECEIVERS = ("chromium", "firefox")
# The names the papers give the implementations inside the browsers: Firefox's QUIC is neqo (imc24's neqo client,
# ackfreq22's neqo row), Chromium's is Chrome's (ackfreq22's chrome row).
PAPER_IMPLEMENTATION = {"chromium": "chrome", "firefox": "neqo"}
BROWSERS_NOTE = (
    "'(own policy)' rows, where the dataset has them, are the browsers themselves: Debian's Chromium (Google QUIC: an "
    "ACK every 2nd packet for the first 100, then every 10th) and Firefox ESR (neqo) downloading over HTTP/3 with "
    "their own, unsettable ACK policies (quicack.testbed.browsers; the server and the browser versions are in runs)."
)


def rethink_runs(
    runs: pl.DataFrame, profiles: Sequence[str] = (RETHINK_PROFILE,), ack_ratios: Sequence[int] = RETHINK_ACK_RATIOS,
    default_policy_receivers: Sequence[str] = (),
) -> pl.DataFrame:
    """The runs of rethink's and tcpquic's measurements over ``profiles`` at ``ack_ratios``: QUIC receivers with
    that ACK ratio set, its default ACK delay (no RTT fraction) and RFC 9000's immediate ACK on reordering (D, as
    the papers' stacks), Linux TCP; and the ``default_policy_receivers`` (e.g. the browsers) with their own policy
    (``receiver_ack_ratio`` null); 10 MB without loss, any size with
    loss (the loss runs are shorter: a 10 MB transfer at 1 % loss takes minutes). Failed runs kept."""
    quic_delay_default = pl.col("ack_delay_rtt_fraction").is_null()
    loss_profile = pl.col("path_profile").cast(pl.Utf8).str.contains("loss")
    own_policy = pl.col("client_impl").is_in(list(default_policy_receivers)) & pl.col("ack_ratio").is_null()
    return with_receiver_ack_ratio(runs).filter(
        pl.col("path_profile").cast(pl.Utf8).is_in(list(profiles))
        & (pl.col("receiver_ack_ratio").is_in(list(ack_ratios)) | own_policy)
        & (
            (pl.col("protocol") == "tcp")
            | own_policy
            | (quic_delay_default & pl.col("ack_reordering").fill_null("D").eq("D"))
        )
        & (loss_profile | (pl.col("file_bytes") == RETHINK_FILE_BYTES))
    )


# ackfreq22 (../shared/ACKRATIO.md): 1 MB downloads over its three paths (Table 1), with §5.6's 1 % loss in the
# "-loss1" variants; the receiver's ACK ratio set, d = 25 ms (Fig. 4 adds AR 100 and d ≈ RTT/4).
ACKFREQ22_PATHS = ("ackfreq22-4g", "ackfreq22-vdsl", "ackfreq22-satellite")  # Table 4's column order
ACKFREQ22_SATELLITE = "ackfreq22-satellite"
ACKFREQ22_LOSS_SUFFIX = "-loss1"
ACKFREQ22_FILE_BYTES = 1_048_576
ACKFREQ22_ACK_DELAY_MS = 25.0
ACKFREQ22_ACK_RATIOS = (2, 10, 20)
ACKFREQ22_REORDERING_POLICIES = ("D", "NR", "3A")


# The receivers of ackfreq22's own measurements (quicly's client there), both downloading from the quinn server
# (NewReno, paced, quicly's stand-in): the quinn client asked for the policy by ACK_FREQUENCY (D and NR, any AR and
# fixed d) without loss, the aioquic client with quicack's ACK policy (the only one with 3A, and it logs why it sent
# each ACK) with §5.6's loss, where every reordering policy should come from one receiver. Fig. 5's unpaced sender
# (quiche's NewReno) is told apart by ``paced``.
ACKFREQ22_RECEIVERS = ("quinn", "aioquic")


def ackfreq22_runs(
    runs: pl.DataFrame, receivers: Sequence[str] | None = ACKFREQ22_RECEIVERS, paced: bool | None = None
) -> pl.DataFrame:
    """Every 1 MB download over an ackfreq22 path profile with a configured ACK ratio, failed ones kept; adds
    ``path`` (the profile without its loss suffix) and ``lossy`` (§5.6's 1 % loss). ``receivers``: the client
    implementations (None = all); ``paced``: only runs whose server paced (True) or did not (False: Fig. 5's
    steps), None = either (a run that does not record it was paced, as every server paces by default)."""
    profile = pl.col("path_profile").cast(pl.Utf8)
    path = profile.str.replace(f"{ACKFREQ22_LOSS_SUFFIX}$", "")
    pacing = pl.col("pacing").fill_null(True) if "pacing" in runs.columns else pl.lit(True)
    receiver = pl.col("client_impl").is_in(list(receivers)) if receivers is not None else pl.lit(True)
    return runs.filter(
        path.is_in(list(ACKFREQ22_PATHS)) & (pl.col("file_bytes") == ACKFREQ22_FILE_BYTES)
        & pl.col("ack_ratio").is_not_null()
        & (pl.lit(True) if paced is None else pacing == paced) & receiver
    ).with_columns(path.alias("path"), profile.str.ends_with(ACKFREQ22_LOSS_SUFFIX).alias("lossy"))  # fmt: skip


def ackfreq22_matrix_runs(runs: pl.DataFrame, receivers: Sequence[str] | None = ACKFREQ22_RECEIVERS) -> pl.DataFrame:
    """Tables 4 and 5, Fig. 6: AR 2, 10, 20 with d = 25 ms, every path, with and without loss (paced senders; Fig. 5's
    unpaced runs are not part of them)."""
    return ackfreq22_runs(runs, receivers, paced=True).filter(
        pl.col("ack_ratio").is_in(list(ACKFREQ22_ACK_RATIOS)) & (pl.col("ack_delay_ms") == ACKFREQ22_ACK_DELAY_MS)
    )


def ackfreq22_fig4_runs(runs: pl.DataFrame, paced: bool | None = True) -> pl.DataFrame:
    """Fig. 4: the satellite path without added loss, every ACK ratio and delay (AR 100 with d = 25 ms and the paper's
    125 ms ≈ RTT/4), paced senders; ``paced=False``: the same path's runs of an unpaced sender (Fig. 5)."""
    return ackfreq22_runs(runs, paced=paced).filter((pl.col("path") == ACKFREQ22_SATELLITE) & ~pl.col("lossy"))


# ackfreq22 Fig. 3 split long HTTP/3 video sessions: our downloads for it are long enough that the handshake's padded
# datagrams do not dominate the return path.
LONG_DOWNLOAD_BYTES = 10 * 1024 * 1024


def long_download_runs(runs: pl.DataFrame) -> pl.DataFrame:
    """Downloads of at least 10 MB without added loss over any ACK-ratio path profile whose receiver had an ACK ratio
    set (d = 25 ms or the receiver's own, not an RTT fraction), QUIC only: ackfreq22 Fig. 3's set-policy receivers."""
    profile = pl.col("path_profile").cast(pl.Utf8)
    return runs.filter(
        profile.is_not_null() & ~profile.str.contains("loss") & (pl.col("file_bytes") >= LONG_DOWNLOAD_BYTES)
        & pl.col("ack_ratio").is_not_null() & pl.col("ack_delay_rtt_fraction").is_null()
        & (pl.col("client_impl") != TCP_IMPL)
    )  # fmt: skip


def ack_policy_label() -> pl.Expr:
    """'AR 10' for d = 25 ms, 'AR 100, d 10 ms' / 'AR 100, d RTT/4' for any other delay: a policy of ackfreq22's
    figures."""
    delay = (
        pl.when(pl.col("ack_delay_rtt_fraction").is_not_null())
        .then(pl.format("RTT/{}", (1.0 / pl.col("ack_delay_rtt_fraction")).round(0).cast(pl.Int64)))
        .otherwise(pl.format("{} ms", pl.col("ack_delay_ms").round(0).cast(pl.Int64)))
    )
    default_delay = pl.col("ack_delay_ms") == ACKFREQ22_ACK_DELAY_MS
    return (
        pl.when(default_delay.fill_null(False))
        .then(pl.format("AR {}", pl.col("ack_ratio")))
        .otherwise(pl.format("AR {}, d {}", pl.col("ack_ratio"), delay))
        .alias("policy")
    )
