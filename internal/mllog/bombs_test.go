package mllog

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// liveAfterParse parses data and returns the heap the parsed log holds
// (HeapAlloc after a collection, with the log still referenced).
func liveAfterParse(t *testing.T, data []byte) (*Log, uint64) {
	t.Helper()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	l, err := Parse(bytes.NewReader(data), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(l)
	return l, after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
}

// A parsed log costs a small multiple of its size however its values
// nest: a record's arrays and objects are kept as text, not as trees of
// 80 bytes per two input bytes.
func TestParseMemoryDeepArrays(t *testing.T) {
	data := deepArrayLog(8 << 20)
	l, live := liveAfterParse(t, data)
	if ratio := float64(live) / float64(len(data)); ratio > 2 {
		t.Errorf("parsed deep-array log holds %d bytes for %d input bytes (%.1fx); want at most 2x", live, len(data), ratio)
	}
	// The values are still there, and equal the way Python compares them.
	v := l.Records[0].Value
	if v.Kind() != Array || v.Len() != 1 || !pyEqual(v, l.Records[len(l.Records)-1].Value) {
		t.Errorf("deep value lost: kind %v len %d", v.Kind(), v.Len())
	}
	if s := short(v); len(s) > 80 || !strings.HasPrefix(s, "[[[[") {
		t.Errorf("short rendering %q", s)
	}
}

// The shortest records that parse cost a bounded multiple too: records are
// not grown by repeated copying and equal deviation lists are shared.
func TestParseMemoryTinyRecords(t *testing.T) {
	data := tinyRecordLog(8 << 20)
	l, live := liveAfterParse(t, data)
	if ratio := float64(live) / float64(len(data)); ratio > 5 {
		t.Errorf("parsed log of %d tiny records holds %d bytes for %d input bytes (%.1fx); want at most 5x", len(l.Records), live, len(data), ratio)
	}
}

// Unusable MLLOG lines are counted, judged and reported, but only the first
// maxProblemRecords are kept: a file of empty marker lines costs a counter.
func TestParseProblemLinesCounted(t *testing.T) {
	const n = 100000
	var b strings.Builder
	b.WriteString(`:::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "cache_clear", "value": true, "metadata": {}}` + "\n")
	for range n {
		b.WriteString(":::MLLOG \n")
	}
	b.WriteString(`:::MLLOG {"time_ms": 1}` + "\n") // shape problem: upstream crashes
	data := []byte(b.String())
	l, live := liveAfterParse(t, data)
	if len(l.Records) != 1+maxProblemRecords {
		t.Errorf("kept %d records, want %d", len(l.Records), 1+maxProblemRecords)
	}
	if got := l.RecordCount(); got != n+2 {
		t.Errorf("RecordCount %d, want %d", got, n+2)
	}
	if live > uint64(len(data)) {
		t.Errorf("log of %d empty marker lines holds %d bytes", n, live)
	}
	res, err := Check(l, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Compliant || res.Records != n+2 {
		t.Errorf("compliant %v records %d", res.Compliant, res.Records)
	}
	var more, crash bool
	for _, f := range res.Findings {
		if f.Rule == "parse/syntax" && f.Source == SourceRepro && f.Message == fmt.Sprintf("%d more findings of this rule not shown", n-maxFindingsPerRule) {
			more = true
		}
		if f.Rule == "checker/crash" {
			crash = true
		}
	}
	if !more || !crash {
		t.Errorf("findings lack the count of hidden syntax problems (%v) or the crash of an omitted shape problem (%v): %+v", more, crash, res.Findings)
	}
}

// A record lists a bounded number of deviations however many fields it
// has, and the strict format findings are counted past the cap.
func TestParseDeviationsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`:::MLLOG {"time_ms": 1, "key": "x", "value": 0, "metadata": {}`)
	for i := range 1000 {
		fmt.Fprintf(&b, `, "f%d": 0`, i)
	}
	b.WriteString("}\n")
	l, err := Parse(strings.NewReader(b.String()), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if d := l.Records[0].Deviations; len(d) != maxDeviations+1 || d[maxDeviations] != "more deviations not listed" {
		t.Errorf("deviations %d: %q", len(d), d)
	}
}

// Record blocks grow to 4096 and stay there, however many a log fills (a
// shift past the width of int once made the 59th block's size negative).
func TestRecordBlockSize(t *testing.T) {
	prev := 0
	for n := range 200 {
		got := recordBlockSize(n)
		if got < 64 || got > 4096 || got < prev {
			t.Fatalf("recordBlockSize(%d) = %d (previous %d)", n, got, prev)
		}
		prev = got
	}
	// A log of more than 59 full blocks parses whole.
	const records = 60*4096 + 10
	line := `:::MLLOG {"time_ms":0,"key":"","value":0,"metadata":0}` + "\n"
	l, err := Parse(strings.NewReader(strings.Repeat(line, records)), Limits{})
	if err != nil || len(l.Records) != records {
		t.Fatalf("parsed %d of %d records: %v", len(l.Records), records, err)
	}
}
