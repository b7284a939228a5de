package main

import (
	"testing"
	"time"
)

// The bucket must let a full burst through at once and then pace at one token per interval (QScanner's
// -bucket-size / -bucket-refill-duration), which is what sets a scan's connection rate.
func TestTokenBucketBurstThenRate(t *testing.T) {
	b := newTokenBucket(5*time.Millisecond, 10)
	start := time.Now()
	for i := 0; i < 10; i++ {
		b.wait()
	}
	if burst := time.Since(start); burst > 3*time.Millisecond {
		t.Fatalf("a full bucket took %v for its burst", burst)
	}
	for i := 0; i < 40; i++ {
		b.wait()
	}
	elapsed := time.Since(start)
	if elapsed < 195*time.Millisecond || elapsed > 300*time.Millisecond {
		t.Fatalf("40 tokens after the burst at 5 ms each took %v, want about 200 ms", elapsed)
	}
}

func TestReadTargetsNumbersRowsAndParsesSCID(t *testing.T) {
	path := t.TempDir() + "/targets"
	if err := writeFile(path, "ip,sni,port,scid\n198.19.64.1,a.test,443,0000000000000000\n198.19.64.2,b.test,443,00000000000000ff\n"); err != nil {
		t.Fatal(err)
	}
	targets, err := readTargets(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(targets) != 2 || targets[1].ID != 1 || targets[1].Hostname != "b.test" || targets[1].SCID[7] != 0xff || len(targets[1].SCID) != 8 {
		t.Fatalf("unexpected targets %+v", targets)
	}
	if err := writeFile(path, "ip,sni,port,scid\n198.19.64.1,a.test,443,xyz\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := readTargets(path); err == nil {
		t.Fatal("a non-hex scid was accepted")
	}
}
