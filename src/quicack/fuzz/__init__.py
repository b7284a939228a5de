"""``quicack fuzz``: mutated copies of real captures and qlogs through the readers, counting crashes and hangs.

``corpus`` finds the seed files, ``mutate`` derives inputs from them (deterministic per seed and input
number), ``runner`` feeds each input to the entry points of ``quicack pcap`` / ``quicack qlog`` in worker
processes with a per-input timeout and reports inputs, issue rows, crashes, hangs and peak RSS.
"""

from .runner import FuzzReport, run_fuzz

__all__ = ["FuzzReport", "run_fuzz"]
