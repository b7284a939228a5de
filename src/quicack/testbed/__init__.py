"""Emulation testbed: real QUIC clients against real servers — imc24's IACK/WFC quic-go server (quic-go + quicack's
iack.patch), the aioquic server, quinn, ngtcp2, Linux TCP — through emulated paths (needs root).

Modules, in the order a run uses them:

* ``scenarios`` — imc24 scenarios and the expansion of a ``testbed:`` config into run groups
* ``netns`` — client/router/server namespaces and veths (198.18.0.0/15), creation and removal
* ``router`` / ``impair`` — NFQUEUE rules + the user-space delay/loss/drop-list program, tbf bandwidth
* ``capture`` — tcpdump on both router interfaces (``sim/trace_node_{left,right}.pcap``; the layout is
``quicack.layout``)
* ``server_programs`` — command lines of every server implementation: imc24's quic-go server (IACK, WFC, Δt and an
  emulated stack delay, built by src/implementations/build.sh), the aioquic server, quinn, ngtcp2, Linux TCP
* ``iack_wfc_server`` — the aioquic server with instant ACK (IACK) and wait-for-certificate (WFC) emulated in a
  ``QuicConnection`` subclass (the ACK-ratio study's sender; the scan's CDN frontends); ``certs``, ``files``
* ``client_registry`` — every client declared once (read by ``clients`` and src/implementations/build.sh)
* ``clients`` — command lines of the client implementations
* ``ack_policy_receiver`` — the aioquic client's receiver with a set ACK policy (ACK ratio, delay, D / NR / 3A),
  logging why it sent each ACK (qlog ``quicack:ack_sent``)
* ``conditions`` — the papers' conditions (server stack delay per client, each implementation's datagram size, PMTUD,
  connection IDs, ACK delay; data/reference); ``conditions_observed`` — what recorded captures show of them
* ``run`` — one run / one run group (resumed: a group recorded whole is skipped) / the CLI; ``calibrate`` — drop
  lists from a no-loss baseline; ``reduce`` — cuts after recording, said in run.json; ``parts`` — a long recording's
  whole part packed as its own archive
* ``procs``, ``summarize`` — small helpers (captures are read with ``quicack.pcap``)
"""
