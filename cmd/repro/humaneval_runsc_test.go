package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/sandbox"
)

// TestHumanEvalRunscMatchesRunc scores the example samples file (correct,
// wrong and cheating samples) under runc and under runsc: every sample
// gets the same base and plus verdict, and the run record of each names
// its runtime.
func TestHumanEvalRunscMatchesRunc(t *testing.T) {
	home := humanevalHome(t, true)
	example := filepath.Join("..", "..", "examples", "humaneval-samples.jsonl")
	verdicts := map[string]evalResults{}
	ids := map[string]string{}
	for _, rt := range []string{"runc", "runsc"} {
		args := []string{"humaneval", "--samples", example, "--tasks", exampleTasks, "--runtime", rt, "--json"}
		if rt == "runc" {
			args = append(args, "--trust", runcWaivers(t))
		}
		r := repro(t, []string{"REPRO_HOME=" + home}, args...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d: %s", rt, r.code, r.stderr)
		}
		h := parseHumanEvalJSON(t, r)
		ids[rt] = h.RunID
		res := readEvalResults(t, h.ResultsFile)
		if len(res.Eval) != 6 {
			t.Fatalf("%s: %d tasks scored, want 6", rt, len(res.Eval))
		}
		verdicts[rt] = res
		if got := recordRuntime(t, h.RunDir); got != rt {
			t.Errorf("the run record under %s names runtime %q", rt, got)
		}
	}
	runc, runsc := verdicts["runc"], verdicts["runsc"]
	if !reflect.DeepEqual(runc, runsc) {
		t.Errorf("verdicts differ between runc and runsc:\nrunc  %+v\nrunsc %+v", runc, runsc)
	}
	failed := 0
	for _, entries := range runc.Eval {
		for _, e := range entries {
			if e.BaseStatus != "pass" || e.PlusStatus != "pass" {
				failed++
			}
		}
	}
	if failed == 0 {
		t.Error("every example passed: the comparison would not see a difference in failures")
	}
	noFlipsElsewhere(t, home, ids["runc"], ids["runsc"])
}

// noFlipsElsewhere compares two runs of the same samples, made under
// different kernels (runc: the host's; runsc: gVisor's), as a maintainer
// who got them from two machines does: both are exported from home as
// bundles and imported into a fresh home that trusts home's key, and
// `repro runs diff` there must find both verified and no verdict flipped.
func noFlipsElsewhere(t *testing.T, home, a, b string) {
	t.Helper()
	env := []string{"REPRO_HOME=" + home}
	var bundles []string
	for _, id := range []string{a, b} {
		bundle := filepath.Join(t.TempDir(), id+".tar")
		if r := repro(t, env, "runs", "export", id, "--out", bundle); r.code != 0 {
			t.Fatalf("runs export %s: %d %s", id, r.code, r.stderr)
		}
		bundles = append(bundles, bundle)
	}
	r := repro(t, env, "keys", "export", "--trust-file")
	if r.code != 0 {
		t.Fatalf("keys export --trust-file: %d %s", r.code, r.stderr)
	}
	trust := filepath.Join(t.TempDir(), "trust.json")
	if err := os.WriteFile(trust, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	other := []string{"REPRO_HOME=" + t.TempDir()}
	r = repro(t, other, append(append([]string{"runs", "import"}, bundles...), "--trust", trust)...)
	ms := importedAs.FindAllStringSubmatch(r.stdout, -1)
	if r.code != 0 || len(ms) != 2 || ms[0][1] != a || ms[1][1] != b {
		t.Fatalf("runs import: %d %s %s", r.code, r.stdout, r.stderr)
	}
	d := repro(t, other, "runs", "diff", "--json", ms[0][2], ms[1][2])
	var doc struct {
		Flipped []json.RawMessage `json:"flipped"`
		Tasks   int               `json:"tasks"`
	}
	if d.code != 0 || json.Unmarshal([]byte(d.stdout), &doc) != nil {
		t.Fatalf("runs diff %s %s: exit %d\n%s%s", a, b, d.code, d.stdout, d.stderr)
	}
	if len(doc.Flipped) != 0 {
		t.Errorf("runs diff %s %s: %d verdicts flipped between the two machines:\n%s", a, b, len(doc.Flipped), d.stdout)
	}
}

// recordRuntime reads the sandbox runtime from the run record in dir.
func recordRuntime(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "record.json"))
	if err != nil {
		t.Fatalf("run record: %v", err)
	}
	var rec struct {
		Sandbox struct {
			Runtime string `json:"runtime"`
		} `json:"sandbox"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("run record: %v", err)
	}
	return strings.TrimSpace(rec.Sandbox.Runtime)
}

// TestHumanEvalCanonicalFull: the 164 canonical solutions pass, base and
// plus, under the default runtime, and the other runtime gives the same
// verdicts on another shape of machine (one container at a time). On an
// engine whose runc has an open escape the default is runsc, and runc
// runs with a recorded waiver.
func TestHumanEvalCanonicalFull(t *testing.T) {
	home := humanevalHome(t, true)
	env := []string{"REPRO_HOME=" + home}
	r := repro(t, env, "humaneval", "--canonical")
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "pass@1 (base / plus): 100.0 / 100.0") || !strings.Contains(r.stdout, "self-check 164/164 passed") {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	t.Logf("%s", r.stdout)
	rows, lr := listRuns(t, home, "--kind", "humaneval", "--limit", "1")
	if lr.code != 0 || len(rows) != 1 {
		t.Fatalf("runs list: %d %v %s", lr.code, rows, lr.stderr)
	}
	first, _ := rows[0]["id"].(string)
	args := []string{"humaneval", "--canonical", "--parallel", "1", "--json"}
	switch rt := recordRuntime(t, layout.Home(home).Run(first)); rt {
	case "runsc":
		args = append(args, "--runtime", "runc", "--trust", runcWaivers(t))
	case "runc":
		args = append(args, "--runtime", "runsc")
	default:
		t.Fatalf("the run record names runtime %q", rt)
	}
	c := repro(t, env, args...)
	if c.code != 0 {
		t.Fatalf("%v: exit %d: %s", args, c.code, c.stderr)
	}
	noFlipsElsewhere(t, home, parseHumanEvalJSON(t, c).RunID, first)
}

// runcWaivers writes a trust file whose image policy asks for nothing but
// waives every known escape of runc (sandbox.RuntimeAdvisories), with a
// reason and a date: where the engine's runc has open escapes (Debian
// bookworm's 1.1.5), runs default to runsc, and a test that compares
// runc with runsc chooses runc explicitly, with this recorded waiver.
func runcWaivers(t *testing.T) string {
	t.Helper()
	var ws []string
	for _, a := range sandbox.RuntimeAdvisories {
		if a.Runtime == sandbox.Runc {
			ws = append(ws, fmt.Sprintf(`{"id": %q, "package": "runc", "reason": "the test compares runc with runsc on one machine; no untrusted tenant", "expires": %q}`,
				a.ID, time.Now().AddDate(0, 1, 0).Format("2006-01-02")))
		}
	}
	p := filepath.Join(t.TempDir(), "runc-waivers.json")
	if err := os.WriteFile(p, []byte(`{"version": 1, "keys": [], "image": {"runtime_waivers": [`+strings.Join(ws, ",")+`]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
