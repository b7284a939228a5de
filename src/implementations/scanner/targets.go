package main

import (
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// Target is one row of QScanner's input CSV (ip,sni,port,scid[,dcid]), numbered from 0 like QScanner's targetid.
type Target struct {
	ID       int
	Address  string
	Hostname string
	Port     string
	SCID     []byte // the client's Source Connection ID: the key that joins captured packets to this target
}

// readTargets reads the input CSV by column position, as QScanner does; the first row is the header.
func readTargets(path string) ([]Target, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	if _, err := r.Read(); err != nil {
		return nil, fmt.Errorf("%s: no header row: %w", path, err)
	}
	var targets []Target
	for line := 2; ; line++ {
		row, err := r.Read()
		if err == io.EOF {
			return targets, nil
		}
		if err != nil {
			return nil, err
		}
		if len(row) < 4 {
			return nil, fmt.Errorf("%s:%d: want ip,sni,port,scid", path, line)
		}
		scid, err := hex.DecodeString(row[3])
		if err != nil || len(scid) < 1 || len(scid) > 20 {
			return nil, fmt.Errorf("%s:%d: scid %q is not 1..20 bytes of hex", path, line, row[3])
		}
		targets = append(targets, Target{ID: len(targets), Address: row[0], Hostname: row[1], Port: row[2], SCID: scid})
	}
}
