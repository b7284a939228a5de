package main

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The headers of QScanner's output files, as the real scanner writes them (see the QScanner fixture).
var (
	connectionInfoHeader = []string{"targetid", "address", "port", "hostname", "scid", "dcid", "hasRetry",
		"startTime", "handshakeTime", "closeTime", "handshakeDuration", "connectionDuration", "quicVersion",
		"errorMessage"}
	quicConfigHeader = []string{"targetid", "address", "port", "hostname", "original_dst_conn_id",
		"max_idle_timeout", "stateless_reset_token", "max_udp_payload_size", "initial_max_data",
		"initial_max_stream_data_bidi_local", "initial_max_stream_data_bidi_remote", "initial_max_stream_data_uni",
		"initial_max_streams_bidi", "initial_max_streams_uni", "ack_delay_exponent", "max_ack_delay",
		"disable_active_migration", "preferred_address", "active_conn_id_limit", "initial_src_conn_id",
		"retry_src_conn_id"}
	tlsConfigHeader = []string{"targetid", "address", "port", "hostname", "protocol", "ciphersuite",
		"keyShareGroup", "serverExtensions", "serverEncryptedExtensions", "serverCertRequestExtensions",
		"helloRetryRequestExtensions", "certificateExtensions", "certificateHashes"}
	certificatesHeader = []string{"id", "hash", "cert"}
	httpHeaderHeader   = []string{"targetid", "address", "port", "hostname", "Header", "Value"}
)

// csvFile is one output CSV with its header written.
type csvFile struct {
	f *os.File
	w *csv.Writer
}

func createCSV(dir, name string, header []string) (*csvFile, error) {
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	c := &csvFile{f: f, w: csv.NewWriter(f)}
	return c, c.w.Write(header)
}

func (c *csvFile) close() error {
	c.w.Flush()
	if err := c.w.Error(); err != nil {
		return err
	}
	return c.f.Close()
}

// outputs writes QScanner's result files; used from one goroutine only.
type outputs struct {
	info, quicConfig, tlsConfig, certs, headers *csvFile
	certIDs                                     map[string]int // certificate SHA-256 → id in tls_certificates.csv
}

func createOutputs(dir string) (*outputs, error) {
	o := &outputs{certIDs: map[string]int{}}
	var err error
	for _, spec := range []struct {
		dst    **csvFile
		name   string
		header []string
	}{
		{&o.info, "quic_connection_info.csv", connectionInfoHeader},
		{&o.quicConfig, "quic_shared_config.csv", quicConfigHeader},
		{&o.tlsConfig, "tls_shared_config.csv", tlsConfigHeader},
		{&o.certs, "tls_certificates.csv", certificatesHeader},
		{&o.headers, "http_header.csv", httpHeaderHeader},
	} {
		if *spec.dst, err = createCSV(dir, spec.name, spec.header); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func (o *outputs) close() error {
	for _, c := range []*csvFile{o.info, o.quicConfig, o.tlsConfig, o.certs, o.headers} {
		if err := c.close(); err != nil {
			return err
		}
	}
	return nil
}

func (o *outputs) write(r Result) error {
	key := []string{strconv.Itoa(r.ID), r.Address, r.Port, r.Hostname}
	if err := o.info.w.Write(connectionInfoRow(key, r)); err != nil {
		return err
	}
	if r.Params != nil {
		if err := o.quicConfig.w.Write(append(key, quicConfigFields(r)...)); err != nil {
			return err
		}
	}
	if r.TLS != nil {
		hashes, err := o.certificates(r.TLS)
		if err != nil {
			return err
		}
		if err := o.tlsConfig.w.Write(append(key, tlsConfigFields(r.TLS, hashes)...)); err != nil {
			return err
		}
	}
	for name, values := range r.Header { // Go-canonical names (Cf-Ray), as QScanner's http.Header
		if err := o.headers.w.Write(append(append([]string{}, key...), name, postgresArray(values))); err != nil {
			return err
		}
	}
	return nil
}

func connectionInfoRow(key []string, r Result) []string {
	errMsg, version := "", ""
	if r.Err != nil {
		errMsg = r.Err.Error()
	}
	if r.QUICVersion != 0 {
		version = strconv.FormatUint(uint64(r.QUICVersion), 10)
	}
	return append(append([]string{}, key...),
		hex.EncodeToString(r.SCID), "", // dcid: the input gives none, the server picks its own
		strconv.FormatBool(r.Params != nil && r.Params.RetrySourceConnectionID.Len() > 0),
		unixSeconds(r.Start), unixSeconds(r.Handshake), unixSeconds(r.Close),
		millis(r.Handshake.Sub(r.Start)), millis(r.Close.Sub(r.Start)), version, errMsg)
}

func quicConfigFields(r Result) []string {
	p := r.Params
	token, preferred, retry := "", "", ""
	if p.StatelessResetToken != nil {
		token = hex.EncodeToString(p.StatelessResetToken[:])
	}
	if p.PreferredAddress != nil {
		preferred = fmt.Sprintf("%s %s", p.PreferredAddress.IPv4, p.PreferredAddress.IPv6)
	}
	if p.RetrySourceConnectionID.Len() > 0 {
		retry = hex.EncodeToString(p.RetrySourceConnectionID.Bytes())
	}
	return []string{
		hex.EncodeToString(p.OriginalDestinationConnectionID.Bytes()),
		millis(p.MaxIdleTimeout), token,
		strconv.FormatInt(int64(p.MaxUDPPayloadSize), 10),
		strconv.FormatInt(int64(p.InitialMaxData), 10),
		strconv.FormatInt(int64(p.InitialMaxStreamDataBidiLocal), 10),
		strconv.FormatInt(int64(p.InitialMaxStreamDataBidiRemote), 10),
		strconv.FormatInt(int64(p.InitialMaxStreamDataUni), 10),
		strconv.FormatInt(p.InitialMaxStreamsBidi, 10),
		strconv.FormatInt(p.InitialMaxStreamsUni, 10),
		strconv.Itoa(int(p.AckDelayExponent)),
		millis(p.MaxAckDelay),
		strconv.FormatBool(p.DisableActiveMigration),
		preferred,
		strconv.FormatUint(p.ActiveConnectionIDLimit, 10),
		hex.EncodeToString(p.InitialSourceConnectionID.Bytes()),
		retry,
	}
}

// tlsConfigFields: crypto/tls does not expose the raw ServerHello and EncryptedExtensions extensions that
// QScanner's patched TLS stack records, so those columns hold empty lists.
func tlsConfigFields(s *tls.ConnectionState, certHashes []string) []string {
	protocol := fmt.Sprintf("%x", s.Version)
	if s.Version == tls.VersionTLS13 {
		// A TLS 1.3 ServerHello carries legacy_version 0x0303 (RFC 8446 §4.1.3); QScanner records that field.
		protocol = fmt.Sprintf("%x", tls.VersionTLS12)
	}
	return []string{
		protocol,
		fmt.Sprintf("%x", s.CipherSuite),
		strconv.Itoa(int(s.CurveID)),
		"[]", "[]", "", "", "[]",
		strings.Join(certHashes, " "),
	}
}

// certificates adds unseen certificates of the chain to tls_certificates.csv and returns the chain's hashes.
func (o *outputs) certificates(s *tls.ConnectionState) ([]string, error) {
	var hashes []string
	for _, c := range s.PeerCertificates {
		sum := sha256.Sum256(c.Raw)
		h := hex.EncodeToString(sum[:])
		hashes = append(hashes, h)
		if _, seen := o.certIDs[h]; seen {
			continue
		}
		id := len(o.certIDs) + 1
		o.certIDs[h] = id
		block := strings.TrimRight(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})), "\n")
		if err := o.certs.w.Write([]string{strconv.Itoa(id), h, block}); err != nil {
			return nil, err
		}
	}
	return hashes, nil
}

// postgresArray writes header values as QScanner does: {v1,v2}.
func postgresArray(values []string) string { return "{" + strings.Join(values, ",") + "}" }

func unixSeconds(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

func millis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// progressLog writes QScanner's JSON log lines ("Scanned connections" every 30 s and at the end).
type progressLog struct {
	f *os.File
}

func (l progressLog) scanned(total, sinceLast int64) {
	line, _ := json.Marshal(struct {
		Level     string `json:"level"`
		InTotal   int64  `json:"in_total"`
		SinceLast int64  `json:"since_last"`
		Time      int64  `json:"time"`
		Message   string `json:"message"`
	}{"info", total, sinceLast, time.Now().Unix(), "Scanned connections"})
	_, _ = l.f.Write(append(line, '\n'))
}
