"""Emulation testbed: real QUIC clients against an IACK/WFC aioquic server through emulated paths (needs root).

Modules, in the order a run uses them:

* ``scenarios`` — imc24 scenarios and the expansion of a ``testbed:`` config into run groups
* ``netns`` — client/router/server namespaces and veths (198.18.0.0/15), creation and removal
* ``router`` / ``impair`` — NFQUEUE rules + the user-space delay/loss/drop-list program, tbf bandwidth
* ``capture`` — tcpdump on both router interfaces (``sim/trace_node_{left,right}.pcap``; the layout is ``quicack.layout``)
* ``iack_wfc_server`` — our aioquic server with instant ACK (IACK) and wait-for-certificate (WFC); ``certs``, ``files``
* ``server_programs`` — command lines of every server implementation (ours and unmodified quic-go, quinn, ngtcp2)
* ``clients`` — command lines of the client implementations
* ``ack_policy_receiver`` — the aioquic client's receiver with a set ACK policy (ACK ratio, delay, D / NR / 3A),
  logging why it sent each ACK (qlog ``quicack:ack_sent``)
* ``run`` — one run / one run group / the CLI; ``calibrate`` — drop lists from a no-loss baseline
* ``procs``, ``summarize`` — small helpers (captures are read with ``quicack.pcap``)
"""
