// Command client downloads one URL over hq-interop with golang.org/x/net/quic, writing a
// TLS keylog and per-connection qlog traces (x/net's slog-based JSON-SEQ handler).
// x/net/quic has no HTTP/3 layer, so only hq-interop is offered.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"time"

	"golang.org/x/net/quic"
	"golang.org/x/net/quic/qlog"
)

const alpnHQ = "hq-interop"

func main() {
	appProtocol := flag.String("alpn", "hq", "application protocol: only hq is supported")
	keylogPath := flag.String("keylog", "", "write TLS secrets (NSS key log format) to this file")
	qlogDir := flag.String("qlog-dir", "", "write qlog traces into this directory")
	downloadDir := flag.String("download-dir", ".", "save the body as <dir>/<basename of the URL path>")
	timeout := flag.Duration("timeout", 30*time.Second, "give up after this long")
	keyShare := flag.String("key-share", "", "x25519: offer X25519 alone (a one-datagram ClientHello, as Go before 1.23); default: crypto/tls's own")
	showVersion := flag.Bool("version", false, "print the golang.org/x/net version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(xnetVersion())
		return
	}
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: client [flags] https://host:port/file")
		os.Exit(2)
	}
	if *appProtocol != "hq" {
		fmt.Fprintf(os.Stderr, "application protocol %q not supported (only hq)\n", *appProtocol)
		os.Exit(2)
	}
	if *keyShare != "" && *keyShare != "x25519" {
		fmt.Fprintf(os.Stderr, "unknown --key-share %q (x25519)\n", *keyShare)
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *keylogPath, *qlogDir, *downloadDir, *timeout, *keyShare == "x25519"); err != nil {
		fmt.Fprintf(os.Stderr, "download failed: %v\n", err)
		os.Exit(1)
	}
}

func xnetVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "golang.org/x/net" {
				return dep.Version
			}
		}
	}
	return "unknown"
}

func run(rawURL, keylogPath, qlogDir, downloadDir string, timeout time.Duration, x25519Only bool) error {
	target, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	port := target.Port()
	if port == "" {
		port = "443"
	}
	addr := net.JoinHostPort(target.Hostname(), port)
	config := &quic.Config{
		TLSConfig: &tls.Config{
			// The testbed servers use self-signed certificates.
			InsecureSkipVerify: true,
			MinVersion:         tls.VersionTLS13,
			NextProtos:         []string{alpnHQ},
			ServerName:         target.Hostname(),
		},
		// A client only: refuse streams the peer might open.
		MaxBidiRemoteStreams: -1,
		MaxUniRemoteStreams:  -1,
	}
	if x25519Only {
		// Go >= 1.24 also offers an X25519MLKEM768 key share (1.23: X25519Kyber768), whose size splits the ClientHello over two Initials.
		config.TLSConfig.CurvePreferences = []tls.CurveID{tls.X25519}
	}
	if keylogPath != "" {
		keylog, err := os.Create(keylogPath)
		if err != nil {
			return err
		}
		defer keylog.Close()
		config.TLSConfig.KeyLogWriter = keylog
	}
	if qlogDir != "" {
		if err := os.MkdirAll(qlogDir, 0o755); err != nil {
			return err
		}
		// Frame level: the analysis needs every ACK frame, not just packet headers.
		config.QLogLogger = slog.New(qlog.NewJSONHandler(qlog.HandlerOptions{
			Level: quic.QLogLevelFrame,
			Dir:   qlogDir,
		}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	endpoint, err := quic.Listen("udp", ":0", config)
	if err != nil {
		return err
	}
	defer func() {
		// Bounded: the connection is closed already; this only releases the socket.
		closeCtx, cancelClose := context.WithTimeout(context.Background(), time.Second)
		defer cancelClose()
		_ = endpoint.Close(closeCtx)
	}()
	conn, err := endpoint.Dial(ctx, "udp", addr, config)
	if err != nil {
		return err
	}
	err = fetch(ctx, conn, target, downloadDir)
	conn.Abort(nil)
	// Wait for the close to finish so that the connection's qlog trace is complete.
	_ = conn.Wait(ctx)
	return err
}

func fetch(ctx context.Context, conn *quic.Conn, target *url.URL, downloadDir string) error {
	outPath := filepath.Join(downloadDir, path.Base(target.Path))
	// The body goes to a .part file that becomes outPath only when complete, so that a file
	// at outPath always means a finished download.
	out, err := os.Create(outPath + ".part")
	if err != nil {
		return err
	}
	err = receive(ctx, conn, target, out)
	if closeErr := out.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		_ = os.Remove(out.Name())
		return err
	}
	return os.Rename(out.Name(), outPath)
}

func receive(ctx context.Context, conn *quic.Conn, target *url.URL, out io.Writer) error {
	stream, err := conn.NewStream(ctx)
	if err != nil {
		return err
	}
	defer stream.Close()
	stream.SetReadContext(ctx)
	stream.SetWriteContext(ctx)
	if _, err := stream.Write([]byte("GET " + target.RequestURI() + "\r\n")); err != nil {
		return err
	}
	if err := stream.CloseWrite(); err != nil {
		return err
	}
	n, err := io.Copy(out, stream)
	if err != nil {
		return err
	}
	if n == 0 {
		return errors.New("empty response")
	}
	return nil
}
