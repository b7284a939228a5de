//go:build quicack_iack

// Command server serves files from a directory over QUIC with quic-go, speaking HTTP/3 and hq-interop on the
// same port (chosen by ALPN): the testbed's imc24 server. It is built against quic-go with the quicack patch
// (iack.patch, go.iack.mod; src/implementations/build.sh), whose handshake modes it sets:
//
//	--mode iack   instant ACK: the client's first Initial packet is acknowledged at once in an ACK-only Initial
//	--mode wfc    wait for certificate: nothing before the ServerHello, which carries the first ACK
//	--mode none   quic-go as released (the patch's code paths are not taken)
//
// --cert-delay-ms (Δt) hands the ClientHello to TLS that long after the first Initial arrived (a certificate
// store); --server-hello-hold-ms keeps the first flight back until that long after TLS got the ClientHello (an
// emulated stack delay). Both are deadlines of quic-go's connection loop.
//
// --initial-packet-size, --disable-pmtud and --connection-id-length set the datagram size before path-MTU discovery,
// whether it runs, and the length of the connection IDs the server issues (quic.Config / quic.Transport; 0 and false
// keep quic-go's defaults): the papers' conditions (quicack.testbed.conditions).
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"quicack/clients/quic-go/internal/qlogfiles"
	"strings"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

const alpnHQ = "hq-interop"

// The pinned quic-go version and the SHA-256 of iack.patch: build.sh sets both with -ldflags -X, so that
// --version names the release and the patch (the replaced module's build info says only "(devel)").
var (
	quicGoVersion = "unknown"
	patchSHA256   = "unknown"
)

// info is what the server says about itself in --ready-file once it listens (run.json's server fields).
type info struct {
	ServerImpl        string   `json:"server_impl"`
	ServerVersion     string   `json:"server_version"`
	Mode              string   `json:"mode"`
	CertDelayMs       float64  `json:"cert_delay_ms"`
	ServerHelloHoldMs float64  `json:"server_hello_hold_ms"`
	CertBytes         int      `json:"cert_bytes"`
	InitialRTTMs      float64  `json:"server_initial_rtt_ms"`
	InitialPTOMs      float64  `json:"server_initial_pto_ms"`
	InitialPacketSize int      `json:"server_initial_packet_size"`
	PMTUDiscovery     bool     `json:"server_pmtu_discovery"`
	ConnectionIDBytes int      `json:"server_connection_id_bytes"`
	ALPN              []string `json:"alpn"`
	PID               int      `json:"pid"`
}

func main() {
	listen := flag.String("listen", "127.0.0.1:4433", "UDP address to listen on")
	certFile := flag.String("cert", "", "PEM certificate chain")
	keyFile := flag.String("key", "", "PEM private key")
	wwwDir := flag.String("www", ".", "directory to serve")
	keylogPath := flag.String("keylog", "", "write TLS secrets (NSS key log format) to this file")
	qlogDir := flag.String("qlog-dir", "", "write one qlog file per connection into this directory")
	mode := flag.String("mode", "none", "handshake mode: iack, wfc or none")
	certDelayMs := flag.Float64("cert-delay-ms", 0, "Δt: the ClientHello reaches TLS this long after the first Initial arrived")
	holdMs := flag.Float64("server-hello-hold-ms", 0, "the first flight leaves no earlier than this after TLS got the ClientHello")
	readyFile := flag.String("ready-file", "", "write the server's settings (JSON) here once it listens")
	initialPacketSize := flag.Uint("initial-packet-size", 0, "UDP payload bytes before path-MTU discovery (0: quic-go's default, 1280)")
	disablePMTUD := flag.Bool("disable-pmtud", false, "no path-MTU discovery: datagrams stay at --initial-packet-size")
	cidLength := flag.Int("connection-id-length", 4, "length of the connection IDs the server issues (quic-go's default: 4)")
	showVersion := flag.Bool("version", false, "print the quic-go version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(version())
		return
	}

	quicConf := &quic.Config{
		CertificateDelay:        time.Duration(*certDelayMs * float64(time.Millisecond)),
		ServerHelloHold:         time.Duration(*holdMs * float64(time.Millisecond)),
		InitialPacketSize:       uint16(*initialPacketSize),
		DisablePathMTUDiscovery: *disablePMTUD,
	}
	switch *mode {
	case "iack":
		quicConf.InstantACK = true
	case "wfc":
		quicConf.CoalescedACK = true
	case "none":
		if *certDelayMs != 0 || *holdMs != 0 {
			log.Fatal("--cert-delay-ms and --server-hello-hold-ms need --mode iack or wfc")
		}
	default:
		log.Fatalf("unknown --mode %q (iack, wfc or none)", *mode)
	}

	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		log.Fatal(err)
	}
	tlsConf := &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{http3.NextProtoH3, alpnHQ},
	}
	if *keylogPath != "" {
		keylog, err := os.Create(*keylogPath)
		if err != nil {
			log.Fatal(err)
		}
		defer keylog.Close()
		tlsConf.KeyLogWriter = keylog
	}
	if *qlogDir != "" {
		quicConf.Tracer = (&qlogfiles.Files{Dir: *qlogDir}).Tracer
	}
	udpAddr, err := net.ResolveUDPAddr("udp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	udpConn, err := net.ListenUDP("udp", udpAddr)
	if err != nil {
		log.Fatal(err)
	}
	transport := &quic.Transport{Conn: udpConn, ConnectionIDLength: *cidLength}
	listener, err := transport.Listen(tlsConf, quicConf)
	if err != nil {
		log.Fatal(err)
	}
	packetSize := int(*initialPacketSize)
	if packetSize == 0 {
		packetSize = 1280 // quic-go's protocol.InitialPacketSize
	}
	if *readyFile != "" {
		chainBytes := 0
		for _, der := range cert.Certificate {
			chainBytes += len(der)
		}
		writeReady(*readyFile, info{
			ServerImpl: "quic-go", ServerVersion: version(), Mode: *mode,
			CertDelayMs: *certDelayMs, ServerHelloHoldMs: *holdMs, CertBytes: chainBytes,
			// quic-go's RTT before the first sample and its PTO then (internal/utils.RTTStats: 2 × 100 ms).
			InitialRTTMs: 100, InitialPTOMs: 200,
			InitialPacketSize: packetSize, PMTUDiscovery: !*disablePMTUD, ConnectionIDBytes: *cidLength,
			ALPN: []string{http3.NextProtoH3, alpnHQ}, PID: os.Getpid(),
		})
	}
	h3Server := &http3.Server{Handler: http.FileServer(http.Dir(*wwwDir))}
	fmt.Printf("listening on %s (mode %s)\n", *listen, *mode)
	for {
		conn, err := listener.Accept(context.Background())
		if err != nil {
			log.Fatal(err)
		}
		switch conn.ConnectionState().TLS.NegotiatedProtocol {
		case http3.NextProtoH3:
			go func() { _ = h3Server.ServeQUICConn(conn) }()
		case alpnHQ:
			go serveHQ(conn, *wwwDir)
		default:
			_ = conn.CloseWithError(0x120, "no application protocol")
		}
	}
}

// version is the pinned quic-go version and the hash of the patch it was built with.
func version() string {
	return fmt.Sprintf("%s+quicack-iack.patch.%.12s", quicGoVersion, patchSHA256)
}

// writeReady writes the file aside and renames it, so the testbed never reads half of it.
func writeReady(target string, settings info) {
	data, err := json.MarshalIndent(settings, "", " ")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(target+".tmp", data, 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.Rename(target+".tmp", target); err != nil {
		log.Fatal(err)
	}
}

func serveHQ(conn *quic.Conn, wwwDir string) {
	for {
		stream, err := conn.AcceptStream(context.Background())
		if err != nil {
			return
		}
		go func() {
			defer stream.Close()
			line, err := bufio.NewReader(stream).ReadString('\n')
			if err != nil && err != io.EOF {
				stream.CancelWrite(0x1)
				return
			}
			fields := strings.Fields(line)
			if len(fields) != 2 || fields[0] != "GET" {
				stream.CancelWrite(0x1)
				return
			}
			file, err := os.Open(filepath.Join(wwwDir, path.Clean("/"+fields[1])))
			if err != nil {
				stream.CancelWrite(0x1)
				return
			}
			defer file.Close()
			_, _ = io.Copy(stream, file)
		}()
	}
}
