package mllog

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// The seed corpora live in testdata/fuzz/FuzzParse and
// testdata/fuzz/FuzzDecodeJSON (run with -fuzz=FuzzParse etc.).

var fuzzLimits = Limits{MaxBytes: 1 << 16, MaxLineBytes: 4096, MaxRecords: 256, MaxDepth: 32}

func FuzzParse(f *testing.F) {
	f.Add([]byte(sampleLine + "\n"))
	f.Add([]byte("x :::MLLOG {\"time_ms\": \"1_0\", \"key\": \"run_stop\", \"value\": NaN, \"metadata\": [\"status\"]}\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse(bytes.NewReader(data), fuzzLimits)
		if err != nil {
			var le *LimitError
			if !errors.As(err, &le) {
				t.Fatalf("Parse returned %T %v, want nil or *LimitError", err, err)
			}
			return
		}
		// The shared decoder state (stack views, arena, interned strings)
		// must not leak between records, and values kept as text must
		// read as the trees an eager decoder builds: a decoder per record
		// without lazy values agrees.
		ref, err := parseBytes(data, fuzzLimits.withDefaults(), true)
		if err != nil || len(ref.Records) != len(l.Records) {
			t.Fatalf("fresh-decoder parse: %v, %d records", err, len(ref.Records))
		}
		for i := range l.Records {
			a, b := &l.Records[i], &ref.Records[i]
			if a.Value.String() != b.Value.String() || a.Metadata.String() != b.Metadata.String() || a.Key != b.Key ||
				(a.Problem == nil) != (b.Problem == nil) || len(a.Deviations) != len(b.Deviations) {
				t.Fatalf("record %d differs with a fresh decoder: %+v vs %+v", i, a, b)
			}
		}
		prev := 0
		for i, r := range l.Records {
			if r.Index < i || i > 0 && r.Index <= l.Records[i-1].Index || r.Line < prev || r.Line < 1 || r.Line > l.Lines {
				t.Fatalf("record %d: line %d index %d (lines %d)", i, r.Line, r.Index, l.Lines)
			}
			prev = r.Line
			if r.Problem != nil && (r.Problem.Msg == "" || r.Key != "") {
				t.Fatalf("record %d: problem %+v with key %q", i, r.Problem, r.Key)
			}
		}
		var verdicts [2]bool
		for i, strict := range []bool{false, true} {
			res, err := Check(l, Options{Strict: strict})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := json.Marshal(res); err != nil {
				t.Fatalf("result does not marshal: %v", err)
			}
			for _, fd := range res.Findings {
				if fd.Rule == "" || fd.Message == "" || (fd.Severity != SeverityError && fd.Severity != SeverityWarning) {
					t.Fatalf("bad finding %+v", fd)
				}
			}
			if res.Compliant != (len(res.Errors()) == 0) {
				t.Fatalf("verdict %v with errors %+v", res.Compliant, res.Errors())
			}
			verdicts[i] = res.Compliant
		}
		if verdicts[1] && !verdicts[0] {
			t.Fatalf("compliant in strict mode but not in default mode")
		}
	})
}

// FuzzDecodeJSON compares the decoder with encoding/json: both accept the
// same RFC 8259 texts (ours also takes NaN and Infinity, and refuses
// integers beyond Python's 4300 digits), and what ours decodes encodes to
// JSON that decodes back to an equal value.
func FuzzDecodeJSON(f *testing.F) {
	for _, c := range jsonCases {
		f.Add([]byte(c.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, d, err := decodeJSON(data, 64)
		std := json.Valid(data)
		if err != nil {
			var je *jsonError
			if !errors.As(err, &je) {
				t.Fatalf("error %T %v", err, err)
			}
			if std && !strings.Contains(err.Error(), "nesting") && !strings.Contains(err.Error(), "digits") {
				t.Fatalf("encoding/json accepts %q, we reject: %v", data, err)
			}
			if _, lerr := (&decoder{maxDepth: 64, lazy: true}).decode(data); lerr == nil {
				t.Fatalf("lazy decoder accepts %q, the eager one rejects it: %v", data, err)
			}
			return
		}
		if !std && !d.nonFinite {
			t.Fatalf("we accept %q, encoding/json rejects it", data)
		}
		// A lazy decoder (values below the top level kept as text) accepts
		// the same texts, with the same flags, and its values read back as
		// the eager ones.
		ld := &decoder{maxDepth: 64, lazy: true}
		lv, lerr := ld.decode(data)
		if lerr != nil || ld.nonFinite != d.nonFinite || ld.duplicates != d.duplicates || lv.String() != v.String() {
			t.Fatalf("lazy decode of %q: %v %s, eager %s", data, lerr, lv, v)
		}
		b, err := json.Marshal(v)
		if err != nil || !json.Valid(b) {
			t.Fatalf("marshal %q: %s %v", data, b, err)
		}
		if d.nonFinite || hasNonFinite(v) {
			return
		}
		back, _, err := decodeJSON(b, 64)
		if err != nil || !pyEqual(v, back) {
			t.Fatalf("round trip %q -> %s: %v", data, b, err)
		}
	})
}
