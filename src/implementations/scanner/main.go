// Command scanner is the quicack package's QUIC scanner: it takes QScanner's input CSV (ip,sni,port,scid),
// connects to every target with quic-go (HTTP/3 HEAD / with -http3), paced by QScanner's token bucket, and writes
// QScanner's output files (quic_connection_info.csv, quic_shared_config.csv, tls_shared_config.csv,
// tls_certificates.csv, http_header.csv, logs and with -keylog an NSS key.log) into -output.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	input := flag.String("input", "", "QScanner input CSV: ip,sni,port,scid with a header row")
	output := flag.String("output", "", "output folder (created; must not exist yet)")
	keylog := flag.Bool("keylog", false, "write the TLS secrets to <output>/key.log (NSS key log format)")
	useHTTP3 := flag.Bool("http3", false, "send HEAD / over HTTP/3 and record the response headers")
	bucketSize := flag.Int64("bucket-size", 100, "token bucket capacity: the largest burst of new connections")
	refillMs := flag.Int("bucket-refill-duration", 100, "one token per this many ms: the long-run connection rate")
	timeout := flag.Duration("timeout", 10*time.Second, "give up on a target after this long")
	showVersion := flag.Bool("print-version", false, "print the quic-go version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(quicGoVersion())
		return
	}
	if *input == "" || *output == "" {
		fmt.Fprintln(os.Stderr, "usage: scanner -input targets.csv -output DIR [-keylog] [-http3] [-bucket-size N] [-bucket-refill-duration MS]")
		os.Exit(2)
	}
	if err := run(*input, *output, *keylog, *useHTTP3, *bucketSize, time.Duration(*refillMs)*time.Millisecond, *timeout); err != nil {
		fmt.Fprintf(os.Stderr, "scanner: %v\n", err)
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

func run(input, output string, keylog, useHTTP3 bool, bucketSize int64, refill, timeout time.Duration) error {
	targets, err := readTargets(input)
	if err != nil {
		return err
	}
	if _, err := os.Stat(output); err == nil {
		return fmt.Errorf("output folder %s already exists", output)
	}
	if err := os.MkdirAll(output, 0o755); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(output, "logs"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	progress := progressLog{f: logFile}
	outs, err := createOutputs(output)
	if err != nil {
		return err
	}
	p := &prober{http3: useHTTP3, timeout: timeout}
	if keylog {
		f, err := os.Create(filepath.Join(output, "key.log"))
		if err != nil {
			return err
		}
		defer f.Close()
		p.keylog = &lockedWriter{w: f}
	}

	results := make(chan Result, 256)
	writeErr := make(chan error, 1)
	go func() { // one writer: the CSV files are written in the order connections finish, as QScanner does
		var first error
		for r := range results {
			if err := outs.write(r); err != nil && first == nil {
				first = err
			}
		}
		if err := outs.close(); err != nil && first == nil {
			first = err
		}
		writeErr <- first
	}()

	var total, sinceLast atomic.Int64
	stopProgress := make(chan struct{})
	go func() {
		tick := time.NewTicker(30 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				progress.scanned(total.Load(), sinceLast.Swap(0))
			case <-stopProgress:
				return
			}
		}
	}()

	bucket := newTokenBucket(refill, bucketSize)
	var wg sync.WaitGroup
	for _, t := range targets {
		bucket.wait()
		total.Add(1)
		sinceLast.Add(1)
		wg.Add(1)
		go func(t Target) {
			defer wg.Done()
			results <- p.probe(t)
		}(t)
	}
	wg.Wait()
	close(stopProgress)
	close(results)
	progress.scanned(total.Load(), sinceLast.Load())
	return <-writeErr
}
