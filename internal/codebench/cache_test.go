package codebench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/journal"
	"github.com/reprolab/repro/internal/runimport"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/trust"
)

// The verdict cache's attacks are played with real signed run folders,
// real bundles and the real importer; only the scoring is left out: the
// cache decides from the journals alone which verdicts a run reuses.

// cacheProgram is a wrong program whose verdict the attacks try to turn.
var cacheProgram = digest.Of([]byte("def f():\n    return 0\n")).Hex()

// cacheTruth stands for the digest of HumanEval/0's ground truth that the
// cached verdicts were judged against.
var cacheTruth = digest.Of([]byte("ground truth")).Hex()

func cacheIdentity(t *testing.T) RunIdentity {
	t.Helper()
	id := RunIdentity{Dataset: "humanevalplus", DatasetSHA256: digest.Of([]byte("dataset")).Hex(), Engine: EngineRepro,
		Image: "sha256:" + digest.Of([]byte("image")).Hex(), Runtime: "runc", Harness: "sha256:" + digest.Of([]byte("harness")).Hex(),
		Limits: RunLimits{MinTimeLimit: 1, TimeFactor: 4, TaskTimeout: 20, ImportAllowance: 4, NearLimitMargin: 0.2}, CPUModel: "test cpu", Repro: "v1.0.0"}
	if err := stampBuild(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// cacheRun leaves a completed humaneval run in home, signed with home's
// run key, whose journal holds status for cacheProgram on HumanEval/0's
// base inputs. id names the run ("" for a new id of now).
func cacheRun(t *testing.T, home, id string, ident RunIdentity, status Status) string {
	t.Helper()
	var r *runs.Run
	var err error
	if id == "" {
		r, err = runs.Create(home, "humaneval")
	} else {
		if err = os.MkdirAll(filepath.Dir(runs.RecordPath(home, id)), 0o700); err == nil {
			r, err = runs.Open(home, id)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	w, err := journal.Create(filepath.Join(r.Dir, JournalFile), journalHeader{Type: "header", RunID: r.ID, Identity: ident, DatasetChoice: "humanevalplus", TaskSpec: "0"})
	if err != nil {
		t.Fatal(err)
	}
	res := PhaseResult{Status: status, FailInput: -1}
	if status != StatusPass {
		res.FailInput = 3
	}
	if err := w.Add(journalVerdict{Type: "verdict", Task: "HumanEval/0", Program: cacheProgram, Phase: "base", Result: res, Truth: cacheTruth}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	head, n := w.Head()
	rec := r.NewRecord("v1.0.0")
	rec.Kind = "humaneval"
	rec.Extra = map[string]any{"journal": JournalReport{File: JournalFile, Entries: n, Head: head}}
	if err := r.Finish(rec, 0); err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// lab is another lab's REPRO_HOME whose key the maintainer's trust file
// lists for run records.
func lab(t *testing.T, home string) string {
	t.Helper()
	other := t.TempDir()
	k, err := runs.LocalKey(other)
	if err != nil {
		t.Fatal(err)
	}
	tf, err := runs.LoadTrust(home, "")
	if err != nil {
		t.Fatal(err)
	}
	tf.Keys = append(tf.Keys, trust.NewKey("lab-b", k.PublicKey(), []trust.Purpose{trust.RunRecords}, nil, nil))
	if err := runs.WriteTrust(filepath.Join(home, "trust.json"), tf); err != nil {
		t.Fatal(err)
	}
	return other
}

// importRun exports run id of from as a bundle and imports it into home
// with home's trust file, as `repro runs import` does.
func importRun(t *testing.T, from, id, home string) {
	t.Helper()
	bundle := filepath.Join(t.TempDir(), "run.tar")
	if _, err := runs.Export(from, id, bundle); err != nil {
		t.Fatal(err)
	}
	tp := filepath.Join(home, "trust.json")
	tf, err := runs.LoadTrust(home, tp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runimport.Import(home, bundle, tf, tp); err != nil {
		t.Fatal(err)
	}
}

func cachedStatus(t *testing.T, home string, ident RunIdentity) (Status, string) {
	t.Helper()
	c, _, err := verdictCache(home, ident, "")
	if err != nil {
		t.Fatal(err)
	}
	v, ok := c[cacheKey{"HumanEval/0", cacheProgram, "base", cacheTruth}]
	if !ok {
		return "", ""
	}
	return v.res.Status, v.from
}

// TestCacheRefusesImportedRuns: a lab whose key the maintainer trusts
// signs a run whose journal says a wrong program passes, and the
// maintainer imports it; the maintainer's --cache never takes its verdict.
func TestCacheRefusesImportedRuns(t *testing.T) {
	home := t.TempDir()
	ident := cacheIdentity(t)
	if _, err := runs.LocalKey(home); err != nil {
		t.Fatal(err)
	}
	other := lab(t, home)
	forged := cacheRun(t, other, "", ident, StatusPass)
	importRun(t, other, forged, home)
	if st, from := cachedStatus(t, home, ident); st != "" {
		t.Fatalf("--cache took verdict %q from imported run %s", st, from)
	}
}

// TestCacheForgedFutureRunID: an imported run whose id is dated tomorrow
// does not override the maintainer's own verdict; and where two of the
// maintainer's own runs disagree, neither is taken, whatever their ids.
func TestCacheForgedFutureRunID(t *testing.T) {
	home := t.TempDir()
	ident := cacheIdentity(t)
	own := cacheRun(t, home, "", ident, StatusFail)
	other := lab(t, home)
	tomorrow := fmt.Sprintf("humaneval-%s-0badc0de", time.Now().UTC().Add(24*time.Hour).Format("20060102T150405Z"))
	cacheRun(t, other, tomorrow, ident, StatusPass)
	importRun(t, other, tomorrow, home)
	if st, from := cachedStatus(t, home, ident); st != StatusFail || from != own {
		t.Fatalf("--cache took %q from %s; want the maintainer's own fail from %s", st, from, own)
	}
	// A run of this home's own that disagrees: the verdict is scored again.
	cacheRun(t, home, "", ident, StatusPass)
	if st, from := cachedStatus(t, home, ident); st != "" {
		t.Fatalf("--cache took %q from %s although this home's runs disagree", st, from)
	}
}

// TestCacheKeyedOnBuild: a verdict of another repro version or another
// repro binary (the judge changed) is not reused; nor one signed by a
// trusted key other than the home's own, even when no import record names
// it.
func TestCacheKeyedOnBuild(t *testing.T) {
	ident := cacheIdentity(t)
	for _, tc := range []struct {
		name string
		edit func(*RunIdentity)
	}{
		{"another version", func(id *RunIdentity) { id.Repro = "v0.9.0" }},
		{"another binary", func(id *RunIdentity) { id.Build = "sha256:" + digest.Of([]byte("an older judge")).Hex() }},
		{"no binary recorded", func(id *RunIdentity) { id.Build = "" }},
		{"another engine", func(id *RunIdentity) { id.Engine = EngineEvalPlus }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			earlier := ident
			tc.edit(&earlier)
			cacheRun(t, home, "", earlier, StatusPass)
			if st, from := cachedStatus(t, home, ident); st != "" {
				t.Fatalf("--cache took %q from %s, made with another identity", st, from)
			}
			// The control: the same identity is reused.
			same := cacheRun(t, home, "", ident, StatusFail)
			if st, from := cachedStatus(t, home, ident); st != StatusFail || from != same {
				t.Fatalf("--cache took %q from %s; want fail from %s", st, from, same)
			}
		})
	}
	t.Run("trusted but not own", func(t *testing.T) {
		home := t.TempDir()
		if _, err := runs.LocalKey(home); err != nil {
			t.Fatal(err)
		}
		other := lab(t, home)
		id := cacheRun(t, other, "", ident, StatusPass)
		// Copied in by hand, with no import record: it verifies against
		// home's trust file, but was not signed by home's key.
		os.MkdirAll(filepath.Join(home, "runs"), 0o700)
		if err := os.Rename(filepath.Dir(runs.RecordPath(other, id)), filepath.Dir(runs.RecordPath(home, id))); err != nil {
			t.Fatal(err)
		}
		r, _ := runs.Open(home, id)
		if _, problems, err := r.Verify(); err != nil || len(problems) > 0 {
			t.Fatalf("the control: the copied run should verify against home's trust file: %v %v", err, problems)
		}
		if st, from := cachedStatus(t, home, ident); st != "" {
			t.Fatalf("--cache took %q from %s, signed by another lab", st, from)
		}
	})
}
