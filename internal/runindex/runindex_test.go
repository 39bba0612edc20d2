package runindex

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/runlabel"
	"github.com/reprolab/repro/internal/runs"
)

// base is the start time of the synthetic runs.
var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeRun describes a synthetic run folder.
type fakeRun struct {
	kind    string
	at      time.Time
	status  string
	assets  []runs.Asset
	samples string         // sha256 of the samples, or ""
	subject map[string]any // label, model and sampling of the record's extra section
}

func hexOf(s string) string { return digest.Of([]byte(s)).Hex() }

// writeRun makes the run folder of r under home with a record.json as
// runs.Finish writes it (unsigned: the index never reads the signature)
// and returns its id.
func writeRun(t testing.TB, home string, n int, r fakeRun) string {
	t.Helper()
	id := fmt.Sprintf("%s-%s-%08x", r.kind, r.at.Format("20060102T150405Z"), n)
	dir := layout.Home(home).Run(id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	rec := runs.Record{Schema: runs.Schema, ID: id, Kind: r.kind, StartedAt: r.at, FinishedAt: r.at.Add(time.Minute),
		Status: r.status, Assets: r.assets, Files: []runs.File{}}
	if r.samples != "" || r.subject != nil {
		extra := map[string]any{}
		for k, v := range r.subject {
			extra[k] = v
		}
		if r.samples != "" {
			extra["samples"] = map[string]any{"sha256": r.samples, "path": "s.jsonl"}
		}
		rec.Extra = extra
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "record.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return id
}

func openIndex(t testing.TB, home string) (*Index, *[]string) {
	t.Helper()
	var mu sync.Mutex
	warnings := &[]string{}
	ix, err := Open(context.Background(), home, func(w string) { mu.Lock(); *warnings = append(*warnings, w); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix, warnings
}

func ids(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func list(t testing.TB, ix *Index, f Filter) []string {
	t.Helper()
	es, err := ix.List(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return ids(es)
}

// world is a home with six runs of every kind of difference.
type world struct {
	home                                               string
	he1, he2, heFail, fid, ingest, broken              string
	humaneval, humanevalplus, edmModel, samples, cifar string
}

func newWorld(t *testing.T) *world {
	w := &world{home: t.TempDir(), humaneval: hexOf("humaneval"), humanevalplus: hexOf("humanevalplus"),
		edmModel: hexOf("edm model"), samples: hexOf("samples"), cifar: hexOf("cifar")}
	he := runs.Asset{ID: "humanevalplus-v0.1.10", SHA256: w.humanevalplus}
	w.he1 = writeRun(t, w.home, 1, fakeRun{kind: "humaneval", at: base, status: "ok", assets: []runs.Asset{he}})
	w.he2 = writeRun(t, w.home, 2, fakeRun{kind: "humaneval", at: base.Add(24 * time.Hour), status: "ok", assets: []runs.Asset{he}, samples: w.samples})
	w.heFail = writeRun(t, w.home, 3, fakeRun{kind: "humaneval", at: base.Add(48 * time.Hour), status: "integrity", assets: []runs.Asset{he}, samples: w.samples})
	w.fid = writeRun(t, w.home, 4, fakeRun{kind: "edm-fid", at: base.Add(72 * time.Hour), status: "ok",
		assets: []runs.Asset{{ID: "edm-cifar10-32x32-cond-vp", SHA256: strings.ToUpper(w.edmModel)}, {ID: "cifar10-train-stats", SHA256: w.cifar}}})
	w.ingest = writeRun(t, w.home, 5, fakeRun{kind: "handoff-minigo", at: base.Add(96 * time.Hour), status: "negative"})
	w.broken = writeRun(t, w.home, 6, fakeRun{kind: "humaneval", at: base.Add(120 * time.Hour), status: "ok"})
	os.WriteFile(runs.RecordPath(w.home, w.broken), []byte(`{"id": `), 0o644)
	return w
}

func TestListFiltersNewestFirst(t *testing.T) {
	w := newWorld(t)
	ix, warnings := openIndex(t, w.home)
	for _, tc := range []struct {
		name string
		f    Filter
		want []string
	}{
		{"all", Filter{}, []string{w.broken, w.ingest, w.fid, w.heFail, w.he2, w.he1}},
		{"limit", Filter{Limit: 2}, []string{w.broken, w.ingest}},
		{"kind", Filter{Kind: "humaneval"}, []string{w.broken, w.heFail, w.he2, w.he1}},
		{"kind prefix is not a kind", Filter{Kind: "handoff"}, nil},
		{"status", Filter{Status: "ok"}, []string{w.fid, w.he2, w.he1}},
		{"unreadable", Filter{Status: StatusUnreadable}, []string{w.broken}},
		{"dataset", Filter{Input: "humanevalplus-v0.1.10"}, []string{w.heFail, w.he2, w.he1}},
		{"model", Filter{Input: "edm-cifar10-32x32-cond-vp"}, []string{w.fid}},
		{"model digest (recorded upper case)", Filter{Digest: w.edmModel[:8]}, []string{w.fid}},
		{"second asset's digest", Filter{Digest: w.cifar}, []string{w.fid}},
		{"samples digest", Filter{Digest: w.samples[:10]}, []string{w.heFail, w.he2}},
		{"samples digest and status", Filter{Digest: w.samples[:10], Status: "ok"}, []string{w.he2}},
		{"digest of nothing", Filter{Digest: hexOf("nothing")[:12]}, nil},
		{"since", Filter{Since: base.Add(72 * time.Hour)}, []string{w.broken, w.ingest, w.fid}},
		{"until (exclusive)", Filter{Until: base.Add(48 * time.Hour)}, []string{w.he2, w.he1}},
		{"window and kind", Filter{Since: base.Add(time.Hour), Until: base.Add(100 * time.Hour), Kind: "humaneval"}, []string{w.heFail, w.he2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := list(t, ix, tc.f); !slices.Equal(got, tc.want) {
				t.Errorf("List(%+v)\n got %v\nwant %v", tc.f, got, tc.want)
			}
		})
	}
	if len(*warnings) != 0 {
		t.Errorf("warnings on a sound index: %q", *warnings)
	}
	es, _ := ix.List(context.Background(), Filter{Kind: "edm-fid"})
	if len(es) != 1 || len(es[0].Inputs) != 2 || es[0].Inputs[0].SHA256 != w.edmModel || es[0].Finished.IsZero() || es[0].RecordSHA256 == "" {
		t.Errorf("edm-fid entry: %+v", es)
	}
}

// TestSubjectFilters: runs are found by the label, model and sampling their
// records state; a record without a label gets its samples' base name.
func TestSubjectFilters(t *testing.T) {
	home := t.TempDir()
	greedy := writeRun(t, home, 1, fakeRun{kind: "humaneval", at: base, status: "ok",
		subject: map[string]any{"label": "coder-7b", "model": "org/coder-7b", "sampling": map[string]any{"temperature": 0.0, "n": 1}}})
	hot := writeRun(t, home, 2, fakeRun{kind: "humaneval", at: base.Add(time.Hour), status: "ok",
		subject: map[string]any{"label": "coder-7b-t0.8", "model": "org/coder-7b", "sampling": map[string]any{"temperature": 0.8, "n": 10, "top_p": 0.95}}})
	old := writeRun(t, home, 3, fakeRun{kind: "humaneval", at: base.Add(2 * time.Hour), status: "ok", samples: hexOf("old samples")})
	other := writeRun(t, home, 4, fakeRun{kind: "edm-fid", at: base.Add(3 * time.Hour), status: "ok"})
	ix, warnings := openIndex(t, home)
	sampling := func(spec string) *runlabel.Sampling {
		s, err := runlabel.ParseSampling(spec)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name string
		f    Filter
		want []string
	}{
		{"label", Filter{Label: "coder-7b"}, []string{greedy}},
		{"default label", Filter{Label: "s"}, []string{old}},
		{"model", Filter{Model: "org/coder-7b"}, []string{hot, greedy}},
		{"model and label", Filter{Model: "org/coder-7b", Label: "coder-7b-t0.8"}, []string{hot}},
		{"temperature 0", Filter{Sampling: sampling("temperature=0")}, []string{greedy}},
		{"n", Filter{Sampling: sampling("n=10")}, []string{hot}},
		{"every value", Filter{Sampling: sampling("temperature=0.8,n=10,top-p=0.95")}, []string{hot}},
		{"a value no run has", Filter{Sampling: sampling("top-p=0.9")}, nil},
		{"unknown label", Filter{Label: "coder"}, nil},
		{"all", Filter{}, []string{other, old, hot, greedy}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := list(t, ix, tc.f); !slices.Equal(got, tc.want) {
				t.Errorf("List(%+v)\n got %v\nwant %v", tc.f, got, tc.want)
			}
			// The filter in Go (for rows re-read from the folders) agrees
			// with the query.
			for _, id := range []string{greedy, hot, old, other} {
				_, e := readRecord(home, id)
				if tc.f.matches(e) != slices.Contains(tc.want, id) {
					t.Errorf("Filter(%+v).matches(%s) = %v", tc.f, id, tc.f.matches(e))
				}
			}
		})
	}
	es, err := ix.List(context.Background(), Filter{Label: "coder-7b-t0.8"})
	if err != nil || len(es) != 1 || es[0].Model != "org/coder-7b" || es[0].Sampling.String() != "temperature=0.8,n=10,top-p=0.95" {
		t.Errorf("entry: %+v %v", es, err)
	}
	if len(*warnings) != 0 {
		t.Errorf("warnings: %q", *warnings)
	}
}

func TestDateFlags(t *testing.T) {
	for _, tc := range []struct {
		in   string
		end  bool
		want time.Time
	}{
		{"2026-03-02", false, base.Add(12 * time.Hour)},
		{"2026-03-02", true, base.Add(36 * time.Hour)},
		{"2026-03-01T13:00:00+01:00", false, base},
	} {
		if got, err := ParseDate(tc.in, tc.end); err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseDate(%q, %v) = %v, %v; want %v", tc.in, tc.end, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "2026-13-01", "2026-03-01 12:00"} {
		if _, err := ParseDate(bad, false); err == nil {
			t.Errorf("ParseDate(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"", "abc", "abcdeg", strings.Repeat("a", 65), "sha256:12", "' OR 1=1 --"} {
		if _, err := ParseDigestPrefix(bad); err == nil {
			t.Errorf("ParseDigestPrefix(%q) accepted", bad)
		}
	}
	if d, err := ParseDigestPrefix("sha256:ABCDEF12"); err != nil || d != "abcdef12" {
		t.Errorf("ParseDigestPrefix(sha256:ABCDEF12) = %q, %v", d, err)
	}
}

// TestFoldersAreTheSourceOfTruth: the index follows folders that appear
// and vanish, and records that change, without being asked to.
func TestFoldersAreTheSourceOfTruth(t *testing.T) {
	w := newWorld(t)
	ix, warnings := openIndex(t, w.home)
	if got := list(t, ix, Filter{Kind: "edm-fid"}); len(got) != 1 {
		t.Fatalf("edm-fid runs: %v", got)
	}
	added := writeRun(t, w.home, 7, fakeRun{kind: "edm-fid", at: base.Add(200 * time.Hour), status: "ok"})
	os.RemoveAll(layout.Home(w.home).Run(w.fid))
	if got := list(t, ix, Filter{Kind: "edm-fid"}); !slices.Equal(got, []string{added}) {
		t.Errorf("after adding %s and removing %s: %v", added, w.fid, got)
	}
	// A folder without a record (a run in progress) is listed as such.
	running := fmt.Sprintf("humaneval-%s-%08x", base.Add(300*time.Hour).Format("20060102T150405Z"), 8)
	os.MkdirAll(layout.Home(w.home).Run(running), 0o700)
	if es, _ := ix.List(context.Background(), Filter{Limit: 1}); len(es) != 1 || es[0].ID != running || es[0].Status != StatusIncomplete {
		t.Errorf("a run in progress: %+v", es)
	}
	if len(*warnings) != 0 {
		t.Errorf("warnings: %q", *warnings)
	}
}

// rewriteRecord edits run id's record.json in place through fn, keeping
// its size, inode and mtime, as someone covering their tracks would.
func rewriteRecord(t *testing.T, home, id string, fn func(string) string) {
	t.Helper()
	p := runs.RecordPath(home, id)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	nb := fn(string(b))
	if len(nb) != len(b) {
		t.Fatalf("rewrite changes the size: %d -> %d", len(b), len(nb))
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte(nb), 0)
	f.Close()
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// TestChangedRecordShowsUp: a record.json changed after it was indexed is
// reported and listed as it is now, also when the change keeps size,
// inode and mtime.
func TestChangedRecordShowsUp(t *testing.T) {
	w := newWorld(t)
	ix, warnings := openIndex(t, w.home)
	if got := list(t, ix, Filter{Status: "integrity"}); !slices.Equal(got, []string{w.heFail}) {
		t.Fatalf("integrity runs: %v", got)
	}
	rewriteRecord(t, w.home, w.heFail, func(s string) string {
		return strings.Replace(s, `"status": "integrity"`, `"status": "ok"       `, 1)
	})
	if got := list(t, ix, Filter{Status: "ok"}); !slices.Contains(got, w.heFail) {
		t.Errorf("the changed run is not listed with its new status: %v", got)
	}
	if got := list(t, ix, Filter{Status: "integrity"}); len(got) != 0 {
		t.Errorf("the changed run is still listed with its old status: %v", got)
	}
	if len(*warnings) != 1 || !strings.Contains((*warnings)[0], w.heFail) {
		t.Errorf("the change was not reported once: %q", *warnings)
	}
}

// TestAlteredIndexIsNotTrusted: rows written into the database by hand
// (a status changed, an input added, a run that has no folder) never
// reach the list.
func TestAlteredIndexIsNotTrusted(t *testing.T) {
	w := newWorld(t)
	ix, warnings := openIndex(t, w.home)
	list(t, ix, Filter{})
	db, err := sql.Open("sqlite", layout.Home(w.home).RunIndex()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ghost := "humaneval-20260301T120000Z-0000ffff"
	for _, stmt := range []string{
		`UPDATE runs SET status = 'ok' WHERE id = '` + w.heFail + `'`,
		`UPDATE runs SET label = 'forged', samples_n = 7 WHERE id = '` + w.he2 + `'`,
		`INSERT INTO inputs VALUES ('` + w.ingest + `', 'asset', 'humanevalplus-v0.1.10', '` + w.humanevalplus + `')`,
		`INSERT INTO runs SELECT '` + ghost + `', kind, 'ok', 0, started_ns, finished_ns, record_sha256, '', fingerprint, label, model, temperature, samples_n, top_p FROM runs WHERE id = '` + w.he1 + `'`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if got := list(t, ix, Filter{Status: "ok", Kind: "humaneval"}); !slices.Equal(got, []string{w.he2, w.he1}) {
		t.Errorf("ok humaneval runs: %v, want %v", got, []string{w.he2, w.he1})
	}
	if got := list(t, ix, Filter{Label: "forged"}); len(got) != 0 {
		t.Errorf("a label forged in the index lists %v", got)
	}
	if got := list(t, ix, Filter{Sampling: &runlabel.Sampling{N: 7}}); len(got) != 0 {
		t.Errorf("a sampling forged in the index lists %v", got)
	}
	if got := list(t, ix, Filter{Input: "humanevalplus-v0.1.10"}); !slices.Equal(got, []string{w.heFail, w.he2, w.he1}) {
		t.Errorf("runs that read humanevalplus: %v", got)
	}
	if len(*warnings) == 0 {
		t.Error("an altered index was not reported")
	}
}

// TestBrokenDatabaseIsRebuilt: a database that is corrupt, truncated, of
// another schema or not a run index is reported and rebuilt from the
// folders, with no run lost.
func TestBrokenDatabaseIsRebuilt(t *testing.T) {
	for name, breakIt := range map[string]func(t *testing.T, db string){
		"garbage": func(t *testing.T, db string) {
			os.WriteFile(db, []byte("not a database at all, but long enough to look like one"), 0o600)
		},
		"truncated to a page": func(t *testing.T, db string) {
			if err := os.Truncate(db, 4096); err != nil {
				t.Fatal(err)
			}
		},
		"truncated mid-page": func(t *testing.T, db string) {
			fi, _ := os.Stat(db)
			if err := os.Truncate(db, fi.Size()/2+100); err != nil {
				t.Fatal(err)
			}
		},
		"a page overwritten": func(t *testing.T, db string) {
			f, _ := os.OpenFile(db, os.O_WRONLY, 0)
			f.WriteAt([]byte(strings.Repeat("\xff", 4096)), 4096)
			f.Close()
		},
		"another schema version": func(t *testing.T, db string) { execDB(t, db, "PRAGMA user_version = 99") },
		"an older schema version": func(t *testing.T, db string) {
			execDB(t, db, "PRAGMA user_version = 1")
		},
		"another application's database": func(t *testing.T, db string) {
			os.Remove(db)
			execDB(t, db, "CREATE TABLE runs (id TEXT); PRAGMA user_version = 1")
		},
	} {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			var want []string
			for i := range 40 {
				want = append(want, writeRun(t, home, i, fakeRun{kind: "humaneval", at: base.Add(time.Duration(-i) * time.Hour), status: "ok",
					assets: []runs.Asset{{ID: "humanevalplus-v0.1.10", SHA256: hexOf(fmt.Sprint(i))}}}))
			}
			ix, _ := openIndex(t, home)
			list(t, ix, Filter{})
			ix.Close()
			db := layout.Home(home).RunIndex()
			breakIt(t, db)
			ix, warnings := openIndex(t, home)
			if len(*warnings) != 1 || !strings.Contains((*warnings)[0], "rebuilding it from the run folders") {
				t.Errorf("warnings: %q", *warnings)
			}
			if got := list(t, ix, Filter{}); !slices.Equal(got, want) {
				t.Errorf("after the rebuild: %d runs, want %d", len(got), len(want))
			}
			var n int
			if err := ix.db.QueryRow("SELECT count(*) FROM inputs").Scan(&n); err != nil || n != len(want) {
				t.Errorf("inputs after the rebuild: %d, %v", n, err)
			}
		})
	}
}

// TestDeletedDatabaseIsRebuilt: a database deleted while a process has it
// open does not disturb that process, and comes back whole for the next.
func TestDeletedDatabaseIsRebuilt(t *testing.T) {
	w := newWorld(t)
	ix, _ := openIndex(t, w.home)
	want := list(t, ix, Filter{})
	db := layout.Home(w.home).RunIndex()
	for _, p := range []string{db, db + "-wal", db + "-shm"} {
		os.Remove(p)
	}
	if got := list(t, ix, Filter{}); !slices.Equal(got, want) {
		t.Errorf("the process that had it open: %v, want %v", got, want)
	}
	ix.Close()
	ix2, _ := openIndex(t, w.home)
	if got := list(t, ix2, Filter{}); !slices.Equal(got, want) {
		t.Errorf("after deleting the database: %v, want %v", got, want)
	}
	ix2.Close()
	// truncated to nothing, it is a database not yet made
	if err := os.Truncate(db, 0); err != nil {
		t.Fatal(err)
	}
	ix3, _ := openIndex(t, w.home)
	if got := list(t, ix3, Filter{}); !slices.Equal(got, want) {
		t.Errorf("after truncating the database to 0 bytes: %v, want %v", got, want)
	}
}

func execDB(t *testing.T, path, stmt string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatal(err)
	}
}

func TestRebuildKeepsEverything(t *testing.T) {
	w := newWorld(t)
	ix, _ := openIndex(t, w.home)
	want := list(t, ix, Filter{})
	n, err := ix.Rebuild(context.Background())
	if err != nil || n != len(want) {
		t.Fatalf("Rebuild: %d, %v; want %d", n, err, len(want))
	}
	if got := list(t, ix, Filter{}); !slices.Equal(got, want) {
		t.Errorf("after Rebuild: %v, want %v", got, want)
	}
}

// TestHostileRecords: whatever a record holds, its entry is bounded and
// the run stays listed.
func TestHostileRecords(t *testing.T) {
	id := fmt.Sprintf("humaneval-%s-%08x", base.Format("20060102T150405Z"), 1)
	long := strings.Repeat(`\u001b[31m`, 10000)
	for name, body := range map[string]string{
		"other run":        `{"id": "humaneval-20990101T000000Z-00000000", "status": "ok"}`,
		"huge fields":      `{"id": "` + id + `", "kind": "` + strings.Repeat("k", 100000) + `", "status": "` + long + `", "assets": [{"id": "` + long + `", "sha256": "zz"}]}`,
		"many assets":      `{"id": "` + id + `", "status": "ok", "assets": [` + strings.Repeat(`{"id": "a", "sha256": "`+hexOf("a")+`"},`, 5000) + `{}]}`,
		"wrong types":      `{"id": "` + id + `", "status": 7, "extra": {"samples": {"sha256": 5}}}`,
		"nested extra":     `{"id": "` + id + `", "status": "ok", "extra": {"samples": "x"}}`,
		"not an object":    `[1, 2, 3]`,
		"empty":            ``,
		"invalid utf-8":    "{\"id\": \"" + id + "\", \"status\": \"ok\xff\xfe\"}",
		"status is a lie":  `{"id": "` + id + `", "status": "unreadable"}`,
		"zero times":       `{"id": "` + id + `", "status": "ok", "started_at": "0001-01-01T00:00:00Z"}`,
		"far future times": `{"id": "` + id + `", "status": "ok", "started_at": "9999-12-31T23:59:59Z", "finished_at": "1600-01-01T00:00:00Z"}`,
	} {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			writeRun(t, home, 1, fakeRun{kind: "humaneval", at: base, status: "ok"})
			if err := os.WriteFile(runs.RecordPath(home, id), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			ix, warnings := openIndex(t, home)
			es, err := ix.List(context.Background(), Filter{})
			if err != nil || len(es) != 1 || es[0].ID != id {
				t.Fatalf("List: %+v, %v", es, err)
			}
			// listed twice without a warning: the stored entry is what
			// the record gives, every time
			es2, _ := ix.List(context.Background(), Filter{})
			if len(*warnings) != 0 || !sameEntry(es[0], es2[0]) {
				t.Errorf("warnings %q; %+v then %+v", *warnings, es[0], es2[0])
			}
			e := es[0]
			if len(e.Kind) > maxField+3 || len(e.Status) > maxField+3 || len(e.Problem) > maxField+3 || len(e.Inputs) > maxInputs {
				t.Errorf("unbounded entry: kind %d, status %d, problem %d bytes, %d inputs", len(e.Kind), len(e.Status), len(e.Problem), len(e.Inputs))
			}
		})
	}
}

// TestLinkAtDatabasePath: a symbolic link planted where the database goes
// is not followed: the file it points at stays as it was.
func TestLinkAtDatabasePath(t *testing.T) {
	w := newWorld(t)
	other := filepath.Join(t.TempDir(), "other.db")
	execDB(t, other, "CREATE TABLE precious (x TEXT); INSERT INTO precious VALUES ('keep me')")
	before, _ := os.ReadFile(other)
	os.MkdirAll(layout.Home(w.home).Index(), 0o700)
	if err := os.Symlink(other, layout.Home(w.home).RunIndex()); err != nil {
		t.Fatal(err)
	}
	ix, warnings := openIndex(t, w.home)
	if got := list(t, ix, Filter{}); len(got) != 6 || len(*warnings) != 1 || !strings.Contains((*warnings)[0], "not a regular file") {
		t.Errorf("listed %v, warnings %q", got, *warnings)
	}
	if after, _ := os.ReadFile(other); string(after) != string(before) {
		t.Error("the file behind the link was changed")
	}
	if fi, err := os.Lstat(layout.Home(w.home).RunIndex()); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the database is not a regular file now: %v", err)
	}
}

// TestOpenFromFolders: without a usable index on disk, the same filters
// work on an index held in memory, and nothing is written.
func TestOpenFromFolders(t *testing.T) {
	w := newWorld(t)
	ix, err := OpenFromFolders(context.Background(), w.home, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if got := list(t, ix, Filter{Kind: "humaneval", Status: "ok"}); !slices.Equal(got, []string{w.he2, w.he1}) {
		t.Errorf("ok humaneval runs: %v", got)
	}
	if _, err := os.Stat(layout.Home(w.home).Index()); !os.IsNotExist(err) {
		t.Errorf("the index folder was created: %v", err)
	}
}

// TestRecordThatIsNotAFile: a record.json that is a link (to a record
// that would read as ok), a folder or a FIFO is not read; the run is
// listed as unreadable, the same way every time.
func TestRecordThatIsNotAFile(t *testing.T) {
	for name, plant := range map[string]func(t *testing.T, p, elsewhere string){
		"link":   func(t *testing.T, p, elsewhere string) { os.Symlink(elsewhere, p) },
		"folder": func(t *testing.T, p, _ string) { os.Mkdir(p, 0o700) },
		"fifo": func(t *testing.T, p, _ string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			id := writeRun(t, home, 1, fakeRun{kind: "humaneval", at: base, status: "ok"})
			p := runs.RecordPath(home, id)
			elsewhere := filepath.Join(t.TempDir(), "record.json")
			b, _ := os.ReadFile(p)
			os.WriteFile(elsewhere, b, 0o644)
			os.Remove(p)
			plant(t, p, elsewhere)
			ix, warnings := openIndex(t, home)
			for range 2 {
				es, err := ix.List(context.Background(), Filter{})
				if err != nil || len(es) != 1 || es[0].Status != StatusUnreadable {
					t.Fatalf("List: %+v, %v", es, err)
				}
			}
			if n, err := ix.Sync(context.Background()); n != 0 || err != nil || len(*warnings) != 0 {
				t.Errorf("the run is indexed again on every list (%d, %v) or warned about: %q", n, err, *warnings)
			}
		})
	}
}

// TestDatasetIsIndexed: each entry names what its run ran on as
// runs.Record.Dataset does (the dataset, else the benchmark, else the
// assets); List corrects a dataset forged in the database, Entries
// returns what the index holds without reading the records again.
func TestDatasetIsIndexed(t *testing.T) {
	home := t.TempDir()
	he := runs.Asset{ID: "humanevalplus-v0.1.10", SHA256: hexOf("humanevalplus")}
	scored := writeRun(t, home, 1, fakeRun{kind: "humaneval", at: base, status: "ok", assets: []runs.Asset{he},
		subject: map[string]any{"dataset": "HumanEvalPlus-v0.1.10", "label": "m"}})
	logs := writeRun(t, home, 2, fakeRun{kind: "mllog", at: base.Add(time.Hour), status: "ok", subject: map[string]any{"benchmark": "minigo"}})
	assets := writeRun(t, home, 3, fakeRun{kind: "edm-fid", at: base.Add(2 * time.Hour), status: "ok",
		assets: []runs.Asset{{ID: "edm-cifar10-32x32-cond-vp", SHA256: hexOf("m")}, {ID: "cifar10-train-stats", SHA256: hexOf("c")}}})
	want := map[string]string{scored: "HumanEvalPlus-v0.1.10", logs: "minigo", assets: "edm-cifar10-32x32-cond-vp, cifar10-train-stats"}
	ix, warnings := openIndex(t, home)
	datasets := func(es []Entry, err error) map[string]string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, e := range es {
			got[e.ID] = e.Dataset
		}
		return got
	}
	if got := datasets(ix.List(context.Background(), Filter{})); !maps.Equal(got, want) {
		t.Errorf("List: %v, want %v", got, want)
	}
	if got := datasets(ix.Entries(context.Background(), Filter{})); !maps.Equal(got, want) {
		t.Errorf("Entries: %v, want %v", got, want)
	}
	execDB(t, layout.Home(home).RunIndex(), `UPDATE subjects SET dataset = 'forged' WHERE run_id = '`+scored+`'`)
	if got := datasets(ix.Entries(context.Background(), Filter{Kind: "humaneval"})); got[scored] != "forged" || len(got) != 1 {
		t.Errorf("Entries read the record again: %v", got)
	}
	if got := datasets(ix.List(context.Background(), Filter{})); !maps.Equal(got, want) || len(*warnings) != 1 {
		t.Errorf("List kept a forged dataset: %v, warnings %q", got, *warnings)
	}
}
