#!/bin/sh
# Record a real ngtcp2 (Debian's gtlsclient/gtlsserver, HTTP/3) run on loopback with keylogs.
# Usage: record_ngtcp2.sh OUTDIR PORT BYTES [extra client options...]   (root, tcpdump on PATH)
# Writes OUTDIR/capture.pcap and OUTDIR/keys.log (client and server secrets, SSLKEYLOGFILE).
set -eu
out=$1; port=$2; bytes=$3; shift 3
mkdir -p "$out"; work=$(mktemp -d)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
mkdir -p "$work/dl"
head -c "$bytes" /dev/zero | tr '\0' x > "$work/file"
rm -f "$out/keys.log"
tcpdump -i lo --immediate-mode -U -s 0 -w "$out/capture.pcap" "udp port $port" 2>"$work/tcpdump.log" & dump=$!
until grep -q listening "$work/tcpdump.log"; do sleep 0.1; done
sleep 2
SSLKEYLOGFILE="$out/keys.log" gtlsserver -q -d "$work" 127.0.0.1 "$port" "$work/key.pem" "$work/cert.pem" & server=$!
sleep 0.5
SSLKEYLOGFILE="$out/keys.log" timeout 30 gtlsclient -q --exit-on-all-streams-close --download "$work/dl" "$@" \
  127.0.0.1 "$port" "https://127.0.0.1:$port/file" || echo "client exit $?"
sleep 0.5
kill "$server"; kill -INT "$dump"; wait "$dump" || true
cmp "$work/file" "$work/dl/file" && echo "$out: download ok"
rm -rf "$work"
