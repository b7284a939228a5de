package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/quic-go/quic-go/logging"
	"github.com/quic-go/quic-go/qlog"
)

// qlogFiles writes one qlog file per connection, named like qlog.DefaultConnectionTracer's
// (<odcid>_<client|server>.sqlog), and lets main wait until every file is flushed and closed,
// so that a process exiting right after closing its connection does not cut its qlog short.
type qlogFiles struct {
	dir  string
	open sync.WaitGroup
}

func (q *qlogFiles) tracer(_ context.Context, p logging.Perspective, connID logging.ConnectionID) *logging.ConnectionTracer {
	label := "server"
	if p == logging.PerspectiveClient {
		label = "client"
	}
	if err := os.MkdirAll(q.dir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "qlog: %v\n", err)
		return nil
	}
	f, err := os.Create(filepath.Join(q.dir, fmt.Sprintf("%s_%s.sqlog", connID, label)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "qlog: %v\n", err)
		return nil
	}
	q.open.Add(1)
	return qlog.NewConnectionTracer(&flushingFile{w: bufio.NewWriter(f), f: f, closed: q.open.Done}, p, connID)
}

// wait blocks until every qlog file is closed, or the timeout passes.
func (q *qlogFiles) wait(timeout time.Duration) bool {
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
