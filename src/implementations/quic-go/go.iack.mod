// The module of go.mod, built against quic-go with the quicack patch (iack.patch): the imc24 IACK/WFC server,
// cmd/server (`go build -modfile=go.iack.mod -tags quicack_iack ./cmd/server`; src/implementations/build.sh makes
// ./build/quic-go first: the module cache's copy of the version pinned below, patched). The client is built
// from go.mod: quic-go as released.
module quicack/clients/quic-go

go 1.26.0

require github.com/quic-go/quic-go v0.65.0

require (
	github.com/quic-go/qpack v0.6.0 // indirect
	golang.org/x/crypto v0.54.0 // indirect
	golang.org/x/net v0.56.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.40.0 // indirect
)

replace github.com/quic-go/quic-go => ./build/quic-go
