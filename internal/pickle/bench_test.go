package pickle

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/testenv"
)

// benchInput reads the pickle named by REPRO_BENCH_PICKLE (made by
// bench/pickle-convert.sh or testdata/torchfix/fixtures.py bench).
func benchInput(b *testing.B) []byte {
	path := testenv.Getenv(b, "REPRO_BENCH_PICKLE", "an EDM-sized snapshot (see bench/pickle-convert.sh)")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkScan measures ScanBytes (decode, nested blobs, report, input
// hash) on an EDM-sized snapshot.
func BenchmarkScan(b *testing.B) {
	data := benchInput(b)
	p := mustProfile(b, ProfileEDMCheckpoint)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if r := ScanBytes(data, p); r.Verdict != Clean {
			b.Fatal(r.Err())
		}
	}
}

// BenchmarkConvert measures ConvertBytes (decode, with the input hashed on
// another goroutine) plus the atomic safetensors write (write, read-back
// comparison and hash, fsync, rename), and reports the two phases.
func BenchmarkConvert(b *testing.B) {
	data := benchInput(b)
	p := mustProfile(b, ProfileEDMCheckpoint)
	out := filepath.Join(b.TempDir(), "model.safetensors")
	b.SetBytes(int64(len(data)))
	var decode, write time.Duration
	for b.Loop() {
		t0 := time.Now()
		m, err := ConvertBytes(data, p)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, _, err := m.WriteSafetensorsFile(out, 0o644); err != nil {
			b.Fatal(err)
		}
		decode += t1.Sub(t0)
		write += time.Since(t1)
	}
	b.ReportMetric(decode.Seconds()/float64(b.N), "decode-s/op")
	b.ReportMetric(write.Seconds()/float64(b.N), "write-s/op")
}
