#!/bin/sh
# The imc24 authors' intermediate pcap.csv of one QScanner measurement folder, made with their tshark command
# (18 fields, '|'-separated, UTC times): how tests/data/qscanner_pcap_csv/pcap.csv.zst was made from
# tests/data/qscanner/vp-a/data/2026-11-22T19:45:06,814209789+00:00 (tshark 4.0.17).
#   usage: make_pcap_csv.sh <measurement folder> <output pcap.csv>
set -eu
folder=$1
out=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
zstdcat "$folder/capture.pcap.zst" > "$tmp/capture.pcap"
zstdcat "$folder/key.log.zst" > "$tmp/key.log"
tshark -2 -d udp.port==443,quic -r "$tmp/capture.pcap" -T fields -o "tls.keylog_file:$tmp/key.log" \
    -e _ws.col.Time -t ud -e ip.src -e ip.dst -e udp.length -e udp.srcport -e udp.dstport -e quic.version \
    -e quic.long.packet_type -e quic.scid -e quic.dcid -e quic.frame_type -e quic.ack.ack_delay \
    -e quic.ack.ack_range -e quic.ack.first_ack_range -e tls.quic.parameter.ack_delay_exponent \
    -e tls.handshake.type -e tls.handshake.extensions_server_name -e ip.ttl -E 'separator=|' > "$out"
