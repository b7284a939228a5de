// Package qlogfiles writes one qlog file per connection for the quicack quic-go client and server.
package qlogfiles

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlogwriter"
)

// Files writes one qlog file per connection, named like qlog.DefaultConnectionTracer's
// (<odcid>_<client|server>.sqlog), and lets main wait until every file is flushed and closed.
// quic-go closes a trace from goroutines after the connection ends, so a process that exits
// right after closing its connection would otherwise cut its qlog short.
type Files struct {
	Dir  string // folder of the qlog files, created on the first connection
	open sync.WaitGroup
}

// Tracer is a quic.Config.Tracer.

func (q *Files) Tracer(_ context.Context, isClient bool, connID quic.ConnectionID) qlogwriter.Trace {
	label := "server"
	if isClient {
		label = "client"
	}
	if err := os.MkdirAll(q.Dir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "qlog: %v\n", err)
		return nil
	}
	f, err := os.Create(filepath.Join(q.Dir, fmt.Sprintf("%s_%s.sqlog", connID, label)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "qlog: %v\n", err)
		return nil
	}
	q.open.Add(1)
	trace := qlogwriter.NewConnectionFileSeq(&flushingFile{w: bufio.NewWriter(f), f: f, closed: q.open.Done}, isClient, connID)
	go trace.Run()
	return trace
}

// wait blocks until every qlog file is closed, or the timeout passes.
func (q *Files) Wait(timeout time.Duration) bool {
	done := make(chan struct{})
	go func() { q.open.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		return false
	}
}

type flushingFile struct {
	w      *bufio.Writer
	f      *os.File
	closed func()
	once   sync.Once
}

func (b *flushingFile) Write(p []byte) (int, error) { return b.w.Write(p) }

func (b *flushingFile) Close() error {
	var err error
	b.once.Do(func() {
		defer b.closed()
		err = b.w.Flush()
		if cerr := b.f.Close(); err == nil {
			err = cerr
		}
	})
	return err
}
