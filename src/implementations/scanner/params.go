package main

import (
	"context"
	"sync"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
)

// peerParams keeps the server's transport parameters of one connection. quic-go exposes them only as a qlog
// event, so a qlogwriter.Trace that writes nothing and keeps that one event is handed to the connection.
type peerParams struct {
	mu     sync.Mutex
	params *qlog.ParametersSet
}

func (p *peerParams) tracer(context.Context, bool, quic.ConnectionID) qlogwriter.Trace { return p }

func (p *peerParams) AddProducer() qlogwriter.Recorder { return p }

func (p *peerParams) RecordEvent(ev qlogwriter.Event) {
	if set, ok := ev.(qlog.ParametersSet); ok && set.Initiator == qlog.InitiatorRemote {
		p.mu.Lock()
		p.params = &set
		p.mu.Unlock()
	}
}

func (p *peerParams) Close() error { return nil }

func (p *peerParams) get() *qlog.ParametersSet {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.params
}
