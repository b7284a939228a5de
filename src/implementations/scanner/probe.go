package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/qlog"
)

// Result is what one connection attempt to a target found.
type Result struct {
	Target
	Start, Handshake, Close time.Time
	Err                     error
	QUICVersion             quic.Version
	Params                  *qlog.ParametersSet // the server's transport parameters
	TLS                     *tls.ConnectionState
	Header                  http.Header // response headers of HEAD / (nil without -http3 or on failure)
}

// scidFirst hands out the target's SCID as the client's first Source Connection ID (so that the capture joins
// to the target list) and random IDs of the same length for any later NEW_CONNECTION_ID.
type scidFirst struct {
	mu    sync.Mutex
	first []byte
	used  bool
}

func (g *scidFirst) GenerateConnectionID() (quic.ConnectionID, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.used {
		g.used = true
		return quic.ConnectionIDFromBytes(g.first), nil
	}
	b := make([]byte, len(g.first))
	if _, err := rand.Read(b); err != nil {
		return quic.ConnectionID{}, err
	}
	return quic.ConnectionIDFromBytes(b), nil
}

func (g *scidFirst) ConnectionIDLen() int { return len(g.first) }

// lockedWriter serialises key-log lines of concurrent connections.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type prober struct {
	keylog  io.Writer // nil: no key log
	http3   bool
	timeout time.Duration
}

// probe runs one QUIC handshake (and HEAD / over HTTP/3) from its own UDP socket, as QScanner's DialAddr does.
func (p *prober) probe(t Target) (res Result) {
	res = Result{Target: t, Start: time.Now()}
	defer func() { // named result: the times are set after the deferred closes above have run
		if res.Handshake.IsZero() {
			res.Handshake = time.Now()
		}
		res.Close = time.Now()
	}()
	addr, err := net.ResolveUDPAddr("udp4", net.JoinHostPort(t.Address, t.Port))
	if err != nil {
		res.Err = err
		return res
	}
	udp, err := net.ListenUDP("udp4", nil)
	if err != nil {
		res.Err = err
		return res
	}
	tr := &quic.Transport{Conn: udp, ConnectionIDGenerator: &scidFirst{first: t.SCID}}
	defer udp.Close()
	defer tr.Close()

	tlsConf := &tls.Config{
		ServerName:         t.Hostname,
		InsecureSkipVerify: true, // a scan records what servers present; it does not judge it
		NextProtos:         []string{http3.NextProtoH3},
		// X25519 only, as QScanner's Go 1.18 offered: today's default hybrid ML-KEM key share makes the
		// ClientHello span two Initial datagrams, and a server's ACK of the first half would look like an
		// instant ACK.
		CurvePreferences: []tls.CurveID{tls.X25519},
	}
	if p.keylog != nil {
		tlsConf.KeyLogWriter = p.keylog
	}
	params := &peerParams{}
	quicConf := &quic.Config{HandshakeIdleTimeout: p.timeout, MaxIdleTimeout: p.timeout, Tracer: params.tracer}
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()

	conn, err := tr.Dial(ctx, addr, tlsConf, quicConf)
	res.Handshake = time.Now()
	res.Params = params.get()
	if err != nil {
		res.Err = err
		return res
	}
	state := conn.ConnectionState()
	res.QUICVersion = state.Version
	res.TLS = &state.TLS
	if p.http3 {
		res.Header, res.Err = headRoot(ctx, conn, t.Hostname)
	}
	_ = conn.CloseWithError(0, "No error")
	return res
}

// headRoot sends HEAD / over HTTP/3 on an established connection and returns the response headers.
func headRoot(ctx context.Context, conn *quic.Conn, host string) (http.Header, error) {
	cc := (&http3.Transport{}).NewClientConn(conn)
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, "https://"+host+"/", nil)
	if err != nil {
		return nil, err
	}
	resp, err := cc.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	_ = resp.Body.Close()
	return resp.Header, nil
}
