package main

import (
	"sync"
	"time"
)

// tokenBucket paces connection attempts like QScanner's (github.com/juju/ratelimit NewBucket): it starts full
// with `capacity` tokens and gains one token every `interval`, so the long-run rate is 1/interval with bursts of
// up to `capacity`.
type tokenBucket struct {
	mu       sync.Mutex
	capacity int64
	interval time.Duration
	tokens   int64
	last     time.Time // time up to which refills have been credited
}

func newTokenBucket(interval time.Duration, capacity int64) *tokenBucket {
	return &tokenBucket{capacity: capacity, interval: interval, tokens: capacity, last: time.Now()}
}

// wait blocks until one token is available and takes it.
func (b *tokenBucket) wait() {
	for {
		b.mu.Lock()
		now := time.Now()
		if gained := int64(now.Sub(b.last) / b.interval); gained > 0 {
			b.tokens = min(b.capacity, b.tokens+gained)
			b.last = b.last.Add(time.Duration(gained) * b.interval)
		}
		if b.tokens > 0 {
			b.tokens--
			b.mu.Unlock()
			return
		}
		sleep := b.last.Add(b.interval).Sub(now)
		b.mu.Unlock()
		time.Sleep(sleep)
	}
}
