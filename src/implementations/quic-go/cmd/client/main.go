// Command client downloads one URL over QUIC with quic-go (HTTP/3 or hq-interop),
// writing a TLS keylog and one qlog per connection into a directory.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"quicack/clients/quic-go/internal/qlogfiles"
	"runtime/debug"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

const alpnHQ = "hq-interop"

func main() {
	appProtocol := flag.String("alpn", "h3", "application protocol: h3 or hq")
	keylogPath := flag.String("keylog", "", "write TLS secrets (NSS key log format) to this file")
	qlogDir := flag.String("qlog-dir", "", "write one qlog file per connection into this directory")
	downloadDir := flag.String("download-dir", ".", "save the body as <dir>/<basename of the URL path>")
	timeout := flag.Duration("timeout", 30*time.Second, "give up after this long")
	keyShare := flag.String("key-share", "", "x25519: offer X25519 alone (a one-datagram ClientHello, as Go before 1.23); default: crypto/tls's own")
	initialPacketSize := flag.Uint("initial-packet-size", 0, "UDP payload bytes before path-MTU discovery (0: quic-go's default, 1280)")
	showVersion := flag.Bool("version", false, "print the quic-go version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(quicGoVersion())
		return
	}
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: client [flags] https://host:port/file")
		os.Exit(2)
	}
	if *keyShare != "" && *keyShare != "x25519" {
		fmt.Fprintf(os.Stderr, "unknown --key-share %q (x25519)\n", *keyShare)
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *appProtocol, *keylogPath, *qlogDir, *downloadDir, *timeout, *keyShare == "x25519", uint16(*initialPacketSize)); err != nil {
		fmt.Fprintf(os.Stderr, "download failed: %v\n", err)
		os.Exit(1)
	}
}

func quicGoVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/quic-go/quic-go" {
				return dep.Version
			}
		}
	}
	return "unknown"
}

func run(rawURL, appProtocol, keylogPath, qlogDir, downloadDir string, timeout time.Duration, x25519Only bool, initialPacketSize uint16) error {
	target, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	// The testbed servers use self-signed certificates.
	tlsConf := &tls.Config{InsecureSkipVerify: true}
	if x25519Only {
		// Go >= 1.24 also offers an X25519MLKEM768 key share (1.23: X25519Kyber768), whose size splits the ClientHello over two Initials.
		tlsConf.CurvePreferences = []tls.CurveID{tls.X25519}
	}
	if keylogPath != "" {
		keylog, err := os.Create(keylogPath)
		if err != nil {
			return err
		}
		defer keylog.Close()
		tlsConf.KeyLogWriter = keylog
	}
	// InitialPacketSize 0 keeps quic-go's default; the papers' conditions set 1252 (quic-go before v0.47).
	quicConf := &quic.Config{InitialPacketSize: initialPacketSize}
	if qlogDir != "" {
		qlogs := &qlogfiles.Files{Dir: qlogDir}
		quicConf.Tracer = qlogs.Tracer
		// Deferred first, so it runs last: after the connection is closed.
		defer func() {
			if !qlogs.Wait(5 * time.Second) {
				fmt.Fprintln(os.Stderr, "qlog: a trace was still open at exit")
			}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	outPath := filepath.Join(downloadDir, path.Base(target.Path))
	// The body goes to a .part file that becomes outPath only when complete, so that a file
	// at outPath always means a finished download.
	out, err := os.Create(outPath + ".part")
	if err != nil {
		return err
	}
	switch appProtocol {
	case "h3":
		err = downloadH3(ctx, target, tlsConf, quicConf, out)
	case "hq":
		err = downloadHQ(ctx, target, tlsConf, quicConf, out)
	default:
		err = fmt.Errorf("unknown application protocol %q (want h3 or hq)", appProtocol)
	}
	if closeErr := out.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		_ = os.Remove(out.Name())
		return err
	}
	return os.Rename(out.Name(), outPath)
}

func downloadH3(ctx context.Context, target *url.URL, tlsConf *tls.Config, quicConf *quic.Config, out io.Writer) error {
	transport := &http3.Transport{TLSClientConfig: tlsConf, QUICConfig: quicConf}
	// Closing the transport closes the QUIC connection, which flushes the qlog.
	defer transport.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return err
	}
	resp, err := transport.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP status %s", resp.Status)
	}
	_, err = io.Copy(out, resp.Body)
	return err
}

func downloadHQ(ctx context.Context, target *url.URL, tlsConf *tls.Config, quicConf *quic.Config, out io.Writer) error {
	tlsConf.NextProtos = []string{alpnHQ}
	conn, err := quic.DialAddr(ctx, target.Host, tlsConf, quicConf)
	if err != nil {
		return err
	}
	defer conn.CloseWithError(0, "")
	stream, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(stream, "GET %s\r\n", target.RequestURI()); err != nil {
		return err
	}
	// Closing the send side sends FIN; the server answers and closes its side.
	if err := stream.Close(); err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = stream.SetReadDeadline(deadline)
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
