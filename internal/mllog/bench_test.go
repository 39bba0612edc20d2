package mllog

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// benchLogs copies the real logs into dir as 104 MiniGo and 56 DLRM
// files, about 18 MB in all: the workload of the target (160 logs
// of 18 MB verified in under a second; upstream takes about 30 s).
func benchLogs(b *testing.B, dir string) ([]string, int64) {
	b.Helper()
	minigo, dlrm := realLogs(b)
	var paths []string
	var total int64
	add := func(src string, name string) {
		data, err := os.ReadFile(src)
		if err != nil {
			b.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
		total += int64(len(data))
	}
	for i := range 104 {
		add(minigo[i%len(minigo)], fmt.Sprintf("minigo_%d.txt", i))
	}
	for i := range 56 {
		add(dlrm[i%len(dlrm)], fmt.Sprintf("dlrm_%d.txt", i))
	}
	return paths, total
}

func BenchmarkVerifyFiles160(b *testing.B) {
	paths, total := benchLogs(b, b.TempDir())
	b.SetBytes(total)
	b.ResetTimer()
	for b.Loop() {
		rep, err := VerifyFiles(context.Background(), paths, Limits{}, Options{Strict: true})
		if err != nil || !rep.Compliant {
			b.Fatalf("err %v compliant %v", err, rep != nil && rep.Compliant)
		}
	}
}

func BenchmarkParseMinigo(b *testing.B) {
	minigo, _ := realLogs(b)
	data, err := os.ReadFile(minigo[0])
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(strings.NewReader(string(data)), Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeWideObject guards against quadratic work on objects with
// many members (duplicate detection, dict equality).
func BenchmarkDecodeWideObject(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("{")
	for i := range 50000 {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `"k%d":%d`, i, i)
	}
	sb.WriteString("}")
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		v, _, err := decodeJSON(data, 8)
		if err != nil || !pyEqual(v, v) {
			b.Fatal(err)
		}
	}
}

// deepArrayLog returns a log of about size bytes whose records each carry
// a value nested 511 deep: the cheapest bytes per decoded element.
func deepArrayLog(size int) []byte {
	line := `:::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "eval_accuracy", "value": ` +
		strings.Repeat("[", 511) + strings.Repeat("]", 511) + `, "metadata": {}}` + "\n"
	return []byte(strings.Repeat(line, max(1, size/len(line))))
}

// tinyRecordLog returns a log of about size bytes of the shortest records
// that parse, each with several format deviations: the most records per
// byte.
func tinyRecordLog(size int) []byte {
	line := `:::MLLOG {"time_ms":0,"key":"","value":0,"metadata":0,"x":0}` + "\n"
	return []byte(strings.Repeat(line, max(1, size/len(line))))
}

// The bomb benchmarks verify hostile logs of growing size and report the
// live heap after parsing (MemStats.HeapInuse after a collection, while
// the log is held) per input byte. bench/mllog-bombs.sh measures the same
// shapes end to end (peak RSS of the command).
func BenchmarkVerifyDeepArrays(b *testing.B) { benchBomb(b, deepArrayLog) }

func BenchmarkVerifyTinyRecords(b *testing.B) { benchBomb(b, tinyRecordLog) }

func benchBomb(b *testing.B, gen func(int) []byte) {
	for _, mb := range []int{1, 4, 16} {
		data := gen(mb << 20)
		b.Run(fmt.Sprintf("%dMiB", mb), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			var peak uint64
			for b.Loop() {
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				l, err := Parse(bytes.NewReader(data), Limits{})
				if err != nil {
					b.Fatal(err)
				}
				var after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&after)
				peak = max(peak, after.HeapInuse-min(after.HeapInuse, before.HeapInuse))
				if _, err := Check(l, Options{Strict: true}); err != nil {
					b.Fatal(err)
				}
				runtime.KeepAlive(l)
			}
			b.ReportMetric(float64(peak)/float64(len(data)), "live-bytes/input-byte")
		})
	}
}
