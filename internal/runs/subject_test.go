package runs

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/runlabel"
)

// subjectText writes the parts of a subject a test compares.
func subjectText(s Subject) string {
	samples := "-"
	if s.Samples != nil {
		samples = s.Samples.Path + "@" + s.Samples.SHA256 + "/" + s.Samples.Format
	}
	return strings.Join([]string{s.Label, s.Model, s.Sampling.String(), s.Dataset, s.Benchmark, s.DatasetMD5, s.Engine,
		map[bool]string{true: "canonical", false: "-"}[s.Canonical], samples, s.Error}, "|")
}

// TestStoredRecordsReadAndVerifyWithTheirSubject reads every record kept
// under testdata (this package's legacy run and the report fixtures, old
// ones included) through both ways a record is read: each still verifies
// against its home's trust file, byte for byte, and carries the run
// subject its extra section states.
func TestStoredRecordsReadAndVerifyWithTheirSubject(t *testing.T) {
	const md5 = "fe585eb4df8c88d844eeb463ea4d0302"
	old := "|||HumanEvalPlus-v0.1.10||" + md5 + "||-|-|"
	scored := func(label, model, sampling, digest string) string {
		return label + "|" + model + "|" + sampling + "|HumanEvalPlus-v0.1.10||" + md5 + "|repro|-|" + label + ".jsonl@" + strings.Repeat(digest, 64) + "/|"
	}
	want := map[string]string{
		"testdata/legacy:humaneval-20261201T123730Z-aacb30b4":               old,
		"../report/testdata/home:humaneval-20261201T123730Z-aacb30b4":       old,
		"../report/testdata/mllog-home:mllog-20261201T135011Z-d739afc1":     "||||minigo|||-|-|",
		"../report/testdata/board-home:humaneval-20261205T013745Z-c0af0c32": scored("coder-7b", "org/coder-7b", "temperature=0,n=1", "1"),
		"../report/testdata/board-home:humaneval-20261205T013747Z-61c60567": scored("tiny-1b", "org/tiny-1b", "temperature=0,n=1", "2"),
		"../report/testdata/board-home:humaneval-20261205T013748Z-7287c905": scored("coder-7b-t0.8", "org/coder-7b", "temperature=0.8,n=10,top-p=0.95", "3"),
		"../report/testdata/board-home:humaneval-20261205T013749Z-7bc988c9": scored("coder-7b", "org/coder-7b", "temperature=0,n=1", "4"),
		"../report/testdata/board-home:humaneval-20261205T013750Z-3a14daf3": scored("edited-results", "org/unknown", "temperature=0,n=1", "5"),
	}
	seen := 0
	for _, src := range []string{"testdata/legacy", "../report/testdata/home", "../report/testdata/mllog-home", "../report/testdata/board-home"} {
		home := t.TempDir()
		copyDir(t, src, home)
		tf, err := LoadTrust(home, "")
		if err != nil {
			t.Fatal(err)
		}
		ids, err := List(home)
		if err != nil || len(ids) == 0 {
			t.Fatalf("%s: runs %v, %v", src, ids, err)
		}
		for _, id := range ids {
			key := src + ":" + id
			w, ok := want[key]
			if !ok {
				t.Errorf("%s: a stored record this test does not know; add what its extra states", key)
				continue
			}
			seen++
			r, err := Open(home, id)
			if err != nil {
				t.Fatal(err)
			}
			rec, raw, err := r.ReadRecord()
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			if got := subjectText(rec.Subject); got != w {
				t.Errorf("%s: ReadRecord's subject\n %s, want\n %s", key, got, w)
			}
			// edited-results is the fixture whose record was changed after
			// it was signed, on purpose: it must keep failing.
			edited := strings.HasSuffix(id, "3a14daf3")
			v, err := r.VerifyWith(tf)
			switch {
			case v == nil:
				t.Fatalf("%s: %v", key, err)
			case edited && err == nil:
				t.Errorf("%s verifies; it was edited after signing", key)
			case !edited && (err != nil || len(v.Problems) > 0):
				t.Errorf("%s no longer verifies: %v %v", key, v.Problems, err)
			}
			if v.RecordSHA256 != sha256Hex(raw) {
				t.Errorf("%s: verified %s, read %s", key, v.RecordSHA256, sha256Hex(raw))
			}
			if got := subjectText(v.Record.Subject); got != w {
				t.Errorf("%s: the verified record's subject\n %s, want\n %s", key, got, w)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("read %d of the %d stored records", seen, len(want))
	}
}

// TestSubjectIsNeverWritten: a record's bytes are those of the same
// record without the typed subject, whatever it holds, so that what a run
// writes (and signs) is what it wrote before the subject existed; reading
// them back gives the subject of the extra section, not the one set.
func TestSubjectIsNeverWritten(t *testing.T) {
	home := t.TempDir()
	r, err := Create(home, "humaneval")
	if err != nil {
		t.Fatal(err)
	}
	temp := 0.2
	type samples struct {
		Path   string `json:"path"`
		SHA256 string `json:"sha256"`
	}
	// The extra section in the shape a scoring run writes it: a struct,
	// members in declaration order.
	extra := struct {
		Dataset  string             `json:"dataset"`
		Samples  samples            `json:"samples"`
		Label    string             `json:"label"`
		Model    string             `json:"model"`
		Sampling *runlabel.Sampling `json:"sampling"`
		Engine   string             `json:"engine"`
	}{"HumanEvalPlus-v0.1.10", samples{"s/m.jsonl", strings.Repeat("ab", 32)}, "m", "org/m", &runlabel.Sampling{Temperature: &temp, N: 5}, "evalplus"}
	rec := r.NewRecord("test")
	rec.Extra = extra
	rec.Subject = Subject{Subject: runlabel.Subject{Label: "not written"}, Dataset: "not written", Samples: &Samples{SHA256: "not written"}}
	if err := r.Finish(rec, 0); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(filepath.Join(r.Dir, recordFile))
	if err != nil {
		t.Fatal(err)
	}
	rec.Subject = Subject{}
	without, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(written, append(without, '\n')) {
		t.Fatalf("record.json differs from the record without its subject:\n%s\nwant\n%s", written, without)
	}
	if bytes.Contains(written, []byte("not written")) {
		t.Fatalf("the subject was written:\n%s", written)
	}
	const want = `m|org/m|temperature=0.2,n=5|HumanEvalPlus-v0.1.10|||evalplus|-|s/m.jsonl@abababababababababababababababababababababababababababababababab/|`
	back, _, err := r.ReadRecord()
	if err != nil {
		t.Fatal(err)
	}
	if got := subjectText(back.Subject); got != want {
		t.Errorf("read back: %s, want %s", got, want)
	}
	rec2, problems, err := r.Verify()
	if err != nil || len(problems) != 0 {
		t.Fatalf("verify: %v %v", problems, err)
	}
	if got := subjectText(rec2.Subject); got != want {
		t.Errorf("verified: %s, want %s", got, want)
	}
}

// TestSubjectOfOddExtras: members of another type are absent, and an
// extra that is not an object gives nothing but what runlabel defaults.
func TestSubjectOfOddExtras(t *testing.T) {
	for in, want := range map[string]string{
		`{"dataset": 7, "benchmark": "b", "engine": ["x"], "samples": "p.jsonl", "canonical": true, "error": "boom"}`: "canonical||||b|||canonical|-|boom",
		`{"samples": {"path": 1, "sha256": "d", "format": "folder"}, "canonical": true}`:                              "|||||||canonical|@d/folder|",
		`{"samples": null, "dataset_md5": "m"}`:                                                                       "|||||m||-|-|",
		`[1, 2]`:                                                                                                      "|||||||-|-|",
		`null`:                                                                                                        "|||||||-|-|",
	} {
		rec, err := DecodeRecord([]byte(`{"schema": "repro.run/v1", "extra": ` + in + `}`))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := subjectText(rec.Subject); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

func sha256Hex(b []byte) string { return digest.Of(b).Hex() }
