#!/bin/sh
# Record a real aioquic download whose datagrams Linux fragments (IPv4): the testbed's aioquic client and server in
# two network namespaces joined by one veth pair with MTU 576. Neither endpoint forces DF (aioquic's UDP sockets keep
# Linux's default, IP_PMTUDISC_WANT), so the kernel cuts every datagram larger than 576 bytes -- the client's first
# Initial (1200 bytes of UDP payload) among them -- into fragments before they reach the wire.
#
# Usage: record_fragmented.sh OUTDIR PORT BYTES [MODE]   (root; ip, ethtool, tcpdump on PATH; PYTHONPATH=<repo>/src)
# MODE: the server's handshake mode (none, iack, wfc; default none). With iack the server first answers with an
# ACK-only Initial, small enough to go whole: the first whole datagram of the capture is then the server's.
# Writes OUTDIR/capture.pcap (tcpdump on the client's veth: every fragment as it went over the wire) and
# OUTDIR/keys.log (the client's and the server's TLS secrets, SSLKEYLOGFILE format).
# Addresses 198.18.0.1 (client) and 198.18.0.2 (server), from the benchmarking range 198.18.0.0/15 the testbed uses;
# the namespaces have no other interface, so nothing leaves the machine. Both namespaces are deleted at the end.
set -eu
out=$1; port=$2; bytes=$3; mode=${4:-none}
repo=$(cd "$(dirname "$0")/../../.." && pwd)
client_ns=qack-frag-c; server_ns=qack-frag-s
work=$(mktemp -d)
cleanup() {
  [ -n "${server:-}" ] && kill "$server" 2>/dev/null || true
  ip netns del "$client_ns" 2>/dev/null || true
  ip netns del "$server_ns" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
ip netns add "$client_ns"; ip netns add "$server_ns"
ip -n "$client_ns" link add c0 mtu 576 type veth peer name s0 mtu 576 netns "$server_ns"
for side in "$client_ns c0 198.18.0.1" "$server_ns s0 198.18.0.2"; do
  set -- $side
  ip netns exec "$1" sysctl -q net.ipv6.conf.all.disable_ipv6=1  # no router solicitations in the capture
  ip -n "$1" addr add "$3/24" dev "$2"
  ip -n "$1" link set "$2" up
  ip -n "$1" link set lo up  # the server warms up on 127.0.0.1
  # the capture must see the datagrams as the wire carries them: no segmentation or receive offloads
  ip netns exec "$1" ethtool -K "$2" tx-udp-segmentation off gso off tso off gro off 2>/dev/null || true
done
mkdir -p "$out" "$work/www" "$work/dl" "$work/qlog"
head -c "$bytes" /dev/zero | tr '\0' x > "$work/www/file"
rm -f "$out/keys.log"
# `ip` and not `udp port`: the fragments after the first carry no UDP header
ip netns exec "$client_ns" tcpdump -i c0 --immediate-mode -U -s 0 -w "$out/capture.pcap" ip 2>"$work/tcpdump.log" &
dump=$!
until grep -q listening "$work/tcpdump.log"; do sleep 0.1; done
ip netns exec "$server_ns" env PYTHONPATH="$repo/src" python -m quicack.testbed.iack_wfc_server --host 198.18.0.2 \
  --port "$port" --www "$work/www" --keylog "$work/server.keys.log" --qlog-dir "$work/qlog" \
  --mode "$mode" --ready-file "$work/ready.json" & server=$!
until [ -s "$work/ready.json" ]; do kill -0 "$server"; sleep 0.1; done
ip netns exec "$client_ns" timeout 30 python "$repo/src/implementations/aioquic/aioquic_client.py" --alpn hq \
  --keylog "$work/client.keys.log" --qlog-dir "$work/qlog" --download-dir "$work/dl" \
  "https://198.18.0.2:$port/file" || echo "client exit $?"
sleep 0.5
kill -INT "$dump"; wait "$dump" || true
cat "$work/client.keys.log" "$work/server.keys.log" > "$out/keys.log"
cmp "$work/www/file" "$work/dl/file" && echo "$out: download ok"
