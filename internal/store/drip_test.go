package store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
)

// drip makes the fixture's server send its headers at once, then one byte
// every interval (with Range support, so a resumed transfer drips on from
// where it broke): the mirror that kept a download alive for days by
// resetting the stall timer forever.
func (f *fixture) drip(interval time.Duration) {
	f.handler = func(w http.ResponseWriter, r *http.Request) {
		off := 0
		if start, ok := rangeStart(r.Header.Get("Range")); ok {
			off = start
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, len(f.data)-1, len(f.data)))
			w.Header().Set("Content-Length", fmt.Sprint(len(f.data)-off))
			w.WriteHeader(http.StatusPartialContent)
		} else {
			w.Header().Set("Content-Length", fmt.Sprint(len(f.data)))
			w.WriteHeader(http.StatusOK)
		}
		for i := off; i < len(f.data); i++ {
			if _, err := w.Write(f.data[i : i+1]); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(interval):
			case <-r.Context().Done():
				return
			}
		}
	}
}

func rangeStart(h string) (int, bool) {
	var n int
	if _, err := fmt.Sscanf(h, "bytes=%d-", &n); err != nil {
		return 0, false
	}
	return n, true
}

// guard bounds a test whose control may be missing: without it the drip
// would run for the file's size times the interval.
func guard(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeoutCause(context.Background(), 20*time.Second, errors.New("still downloading after 20 s: no control ended the drip"))
	t.Cleanup(cancel)
	return ctx
}

// A server that delivers a byte just often enough to dodge the stall timer
// is cut off by the throughput floor, and the message says so.
func TestFetchDripMinSpeed(t *testing.T) {
	f := newFixture(t, 64<<10)
	f.drip(20 * time.Millisecond) // 50 bytes/s: never stalls, 22 minutes for the file
	s := openTestStore(t, f.entry("/file"))
	opt := f.opts() // stall timeout 2 s
	opt.MinSpeed = 1 << 10
	opt.SpeedWindow = 300 * time.Millisecond
	opt.Retries = 1
	err := s.Fetch(guard(t), []string{"test-asset"}, opt)
	assertErr(t, err, exitcode.Negative, "too slow", "below the minimum of 1024 bytes/s", "--min-speed")
	var se *SlowError
	if !errors.As(err, &se) {
		t.Errorf("error %v is not a *SlowError", err)
	}
	assertNoBlob(t, s)
}

// With no floor, the overall deadline ends the download, every source
// and retry included, and the message names it.
func TestFetchDripDeadline(t *testing.T) {
	f := newFixture(t, 64<<10)
	f.drip(20 * time.Millisecond)
	s := openTestStore(t, f.entry("/file"))
	opt := f.opts()
	opt.MinSpeed = -1
	opt.Deadline = 500 * time.Millisecond
	opt.Mirrors = []string{f.srv.URL + "/mirror-drips-too"}
	err := s.Fetch(guard(t), []string{"test-asset"}, opt)
	assertErr(t, err, exitcode.Negative, "not downloaded within the deadline of 500ms", "--deadline")
	var de *DeadlineError
	if !errors.As(err, &de) {
		t.Errorf("error %v is not a *DeadlineError", err)
	}
	assertNoBlob(t, s)
}

// A fast transfer is not affected by the floor.
func TestFetchMinSpeedKeepsFastTransfer(t *testing.T) {
	f := newFixture(t, 1<<20)
	s := openTestStore(t, f.entry("/file"))
	opt := f.opts()
	opt.MinSpeed = 1 << 10
	opt.SpeedWindow = 50 * time.Millisecond
	if err := s.Fetch(guard(t), []string{"test-asset"}, opt); err != nil {
		t.Fatal(err)
	}
	assertStored(t, s, f.data)
}

// BenchmarkFetchDrip shows that the time a dripping server can hold a
// download no longer grows with the file: it is (retries+1) speed
// windows per source, whatever the size (before the floor: size times
// the drip interval). It reports the peak heap too.
func BenchmarkFetchDrip(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20, 16 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			f := newFixture(b, size)
			f.drip(20 * time.Millisecond)
			var peak uint64
			for b.Loop() {
				s := openTestStore(b, f.entry("/file"))
				opt := f.opts()
				opt.MinSpeed = 1 << 10
				opt.SpeedWindow = 250 * time.Millisecond
				opt.Retries = 1
				if err := s.Fetch(context.Background(), []string{"test-asset"}, opt); err == nil {
					b.Fatal("a dripping server completed")
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
			b.ReportMetric(float64(peak)/(1<<20), "heap-MiB")
		})
	}
}
