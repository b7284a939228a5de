// Command server serves files from a directory over QUIC with quic-go, speaking HTTP/3
// and hq-interop on the same port (chosen by ALPN). It exists to record quic-go <-> quic-go
// fixtures where both endpoints write qlogs.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"quicack/clients/quic-go/internal/qlogfiles"
	"strings"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

const alpnHQ = "hq-interop"

func main() {
	listen := flag.String("listen", "127.0.0.1:4433", "UDP address to listen on")
	certFile := flag.String("cert", "", "PEM certificate")
	keyFile := flag.String("key", "", "PEM private key")
	wwwDir := flag.String("www", ".", "directory to serve")
	keylogPath := flag.String("keylog", "", "write TLS secrets (NSS key log format) to this file")
	qlogDir := flag.String("qlog-dir", "", "write one qlog file per connection into this directory")
	flag.Parse()

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
	quicConf := &quic.Config{}
	if *qlogDir != "" {
		quicConf.Tracer = (&qlogfiles.Files{Dir: *qlogDir}).Tracer
	}
	listener, err := quic.ListenAddr(*listen, tlsConf, quicConf)
	if err != nil {
		log.Fatal(err)
	}
	h3Server := &http3.Server{Handler: http.FileServer(http.Dir(*wwwDir))}
	fmt.Printf("listening on %s\n", *listen)
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
