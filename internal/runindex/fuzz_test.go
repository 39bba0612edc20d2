package runindex

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzEntryOf: a record.json is untrusted. Whatever its bytes, the entry
// is bounded, its digests are well-formed or empty, and deriving it twice
// gives the same entry (so a list never reports a change that is not
// there).
func FuzzEntryOf(f *testing.F) {
	id := "humaneval-20260301T120000Z-00000001"
	f.Add(id, []byte(`{"id": "`+id+`", "kind": "humaneval", "status": "ok", "started_at": "2026-03-01T12:00:00Z",
		"assets": [{"id": "humanevalplus-v0.1.10", "sha256": "`+hexOf("x")+`"}], "extra": {"samples": {"sha256": "`+hexOf("s")+`"}}}`))
	f.Add(id, []byte(`{"id": "other"}`))
	f.Add(id, []byte(`[]`))
	f.Add("x", []byte(`{"id": "x", "status": "unreadable", "started_at": "9999-12-31T23:59:59Z"}`))
	f.Add(id, []byte("{\"id\": \""+id+"\", \"kind\": \"\xff\xfe\", \"assets\": [{\"sha256\": \"ABC\"}]}"))
	f.Fuzz(func(t *testing.T, id string, raw []byte) {
		e := entryOf(id, raw)
		for _, s := range []string{e.Kind, e.Status, e.Problem} {
			if len(s) > maxField+len("…") || !utf8.ValidString(s) {
				t.Fatalf("unbounded or invalid field %q", s)
			}
		}
		if e.Status == "" || e.ID != id || len(e.Inputs) > maxInputs {
			t.Fatalf("entry %+v", e)
		}
		for _, in := range e.Inputs {
			if in.SHA256 != "" && (len(in.SHA256) != 64 || strings.Trim(in.SHA256, "0123456789abcdef") != "") {
				t.Fatalf("input digest %q", in.SHA256)
			}
			if len(in.Name) > maxField+len("…") || !utf8.ValidString(in.Name) {
				t.Fatalf("input name %q", in.Name)
			}
		}
		if !sameEntry(e, entryOf(id, raw)) {
			t.Fatal("entryOf is not deterministic")
		}
	})
}

// FuzzFilterFlags: what --digest and --since/--until accept is a hex
// prefix the query can range over, and a time.
func FuzzFilterFlags(f *testing.F) {
	for _, s := range []string{"sha256:ABCDEF", "abcdef0123", "2026-03-01", "2026-03-01T12:00:00+01:00", "' OR 1=1 --", "g00000", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := ParseDigestPrefix(s); err == nil {
			if len(d) < MinDigestPrefix || len(d) > 64 || strings.Trim(d, "0123456789abcdef") != "" {
				t.Fatalf("ParseDigestPrefix(%q) = %q", s, d)
			}
		}
		for _, end := range []bool{false, true} {
			if tm, err := ParseDate(s, end); err == nil && tm.Location() != time.UTC {
				t.Fatalf("ParseDate(%q) = %v, not UTC", s, tm)
			}
		}
	})
}
