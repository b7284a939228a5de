#!/bin/sh
# Record a real quinn client <-> quinn server run (hq-interop) on loopback, both asking for the ACK frequency
# extension (draft-ietf-quic-ack-frequency-04 as quinn-proto 0.11 implements it: ACK_FREQUENCY 0xaf,
# IMMEDIATE_ACK 0x1f; both sides send min_ack_delay, so it is negotiated).
# Usage: record_quinn.sh OUTDIR PORT BYTES   (root, tcpdump on PATH, src/implementations/build.sh quinn done; ports 5600-5699)
# Writes OUTDIR/capture.pcap and OUTDIR/keys.log (the client's secrets, SSLKEYLOGFILE).
set -eu
out=$1; port=$2; bytes=$3
bin=$(cd "$(dirname "$0")/../../../src/implementations/quinn/bin" && pwd)
mkdir -p "$out"; work=$(mktemp -d)
mkdir -p "$work/www" "$work/dl"
head -c "$bytes" /dev/zero | tr '\0' x > "$work/www/file"
rm -f "$out/keys.log"
tcpdump -i lo -U --immediate-mode -B 262144 -s 0 -w "$out/capture.pcap" "udp port $port" 2>"$work/tcpdump.log" & dump=$!
until grep -q listening "$work/tcpdump.log"; do sleep 0.1; done
sleep 1
"$bin/quinn-server" --listen "127.0.0.1:$port" --root "$work/www" --connections 1 --ack-frequency & server=$!
sleep 0.5
timeout 30 "$bin/quinn-client" --ack-frequency --keylog "$out/keys.log" --download-dir "$work/dl" --timeout 20 \
  "https://127.0.0.1:$port/file" || echo "client exit $?"
wait "$server" || echo "server exit $?"
sleep 0.5
kill -INT "$dump"; wait "$dump" || true
cmp "$work/www/file" "$work/dl/file" && echo "$out: download ok"
rm -rf "$work"
