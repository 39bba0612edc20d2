package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs"
)

var (
	update        = flag.Bool("update", false, "rewrite the golden reports")
	updateFixture = flag.Bool("update-fixture", false, "rewrite the fixture run under testdata/home (new key, new run)")
)

const fixtureHome = "testdata/home"

var fixtureOnce sync.Once

// hostile is text a sample or an input could carry to break out of a page.
const hostile = `</td><script>alert("x")</script><img src=x onerror=alert(1)>|`

// writeFixture makes a signed HumanEval run through the runs API in a fresh
// home and copies its public key, trust file and run folder to
// testdata/home.
func writeFixture(t *testing.T) {
	home := t.TempDir()
	r, err := runs.Create(home, "humaneval")
	if err != nil {
		t.Fatal(err)
	}
	pass, fail := "pass", "fail"
	results := map[string]any{
		"date": "2026-01-02 03:04",
		"hash": "fe585eb4df8c88d844eeb463ea4d0302",
		"eval": map[string]any{
			"HumanEval/0": []any{
				map[string]any{"task_id": "HumanEval/0", "solution": "def f(): return 1", "base_status": pass, "plus_status": &pass, "base_fail_tests": []any{}, "plus_fail_tests": []any{},
					"base_elapsed": 0.8, "base_limit": 5.0, "plus_elapsed": 2.5, "plus_limit": 9.0},
				map[string]any{"task_id": "HumanEval/0", "solution": "def f(): return 1", "base_status": pass, "plus_status": &pass, "base_fail_tests": []any{}, "plus_fail_tests": []any{}},
			},
			"HumanEval/10": []any{
				map[string]any{"task_id": "HumanEval/10", "solution": hostile, "base_status": fail, "plus_status": &fail,
					"base_fail_tests": []any{[]any{hostile, strings.Repeat("long input ", 40)}}, "plus_fail_tests": []any{},
					"base_reason": "AssertionError: " + hostile},
				map[string]any{"task_id": "HumanEval/10", "solution": "x", "base_status": fail, "plus_status": &fail,
					"base_fail_tests": []any{[]any{1}}, "plus_fail_tests": []any{}, "base_reason": "timed out",
					"base_elapsed": 12.3, "base_limit": 9.0},
			},
			"HumanEval/2": []any{
				map[string]any{"task_id": "HumanEval/2", "solution": "y", "base_status": pass, "plus_status": &fail,
					"base_fail_tests": []any{}, "plus_fail_tests": []any{[]any{-1.5, "a"}}, "plus_reason": "wrong output"},
				map[string]any{"task_id": "HumanEval/2", "solution": "z", "base_status": pass, "plus_status": &pass, "base_fail_tests": []any{}, "plus_fail_tests": []any{}},
			},
		},
		"pass_at_k": map[string]any{"base": map[string]float64{"pass@1": 2.0 / 3}, "plus": map[string]float64{"pass@1": 0.5}},
	}
	b, _ := json.MarshalIndent(results, "", " ")
	if err := os.WriteFile(filepath.Join(r.Dir, "eval_results.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	rec := r.NewRecord("v0.0.0-fixture")
	rec.Command = []string{"repro", "humaneval", "score", "--samples", "samples.jsonl", "--tasks", "HumanEval/0,HumanEval/2,HumanEval/10"}
	rec.StartedAt = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	rec.Host = runs.Host{Hostname: "lab-1", OS: "linux", Arch: "amd64", Kernel: "6.1.0", CPUModel: "Example CPU", CPUs: 2, MemBytes: 24 << 30}
	rec.Repro.Go = "go1.24"
	rec.Assets = []runs.Asset{{ID: "humanevalplus-v0.1.10", SHA256: strings.Repeat("ab", 32), Size: 1234}}
	rec.Image = map[string]string{"id": "sha256:" + strings.Repeat("1", 64), "manifest_digest": "sha256:" + strings.Repeat("2", 64), "sbom_digest": strings.Repeat("3", 64)}
	rec.Limits = map[string]any{"run": map[string]float64{"min_time_limit": 1, "gt_time_limit_factor": 4, "task_timeout": 20}, "harness_digest": strings.Repeat("4", 64), "parallel": 2, "base_only": false}
	rec.SelfCheck = map[string]any{"tasks": 3, "passed": 3, "stats": map[string]int{"jobs": 3}}
	rec.Summary = map[string]any{"tasks": 3, "samples": 6, "base_passed": 4, "plus_passed": 3, "timeouts": 0,
		"base_pass_at_k": map[string]float64{"pass@1": 2.0 / 3}, "plus_pass_at_k": map[string]float64{"pass@1": 0.5}, "plus_scored": true, "subset": true}
	rec.Extra = map[string]any{"dataset": "HumanEvalPlus-v0.1.10", "dataset_md5": "fe585eb4df8c88d844eeb463ea4d0302"}
	if err := r.Finish(rec, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(fixtureHome); err != nil {
		t.Fatal(err)
	}
	copyTree(t, filepath.Join(home, "runs"), filepath.Join(fixtureHome, "runs"))
	copyTree(t, filepath.Join(home, "keys", "run-signing.pub"), filepath.Join(fixtureHome, "keys", "run-signing.pub"))
	copyTree(t, filepath.Join(home, "trust.json"), filepath.Join(fixtureHome, "trust.json"))
}

// copyTree copies a file or a folder of regular files.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if fi.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// fixture returns a private copy of the fixture home and its run id.
func fixture(t *testing.T) (string, string) {
	t.Helper()
	if *updateFixture {
		fixtureOnce.Do(func() { writeFixture(t) })
	}
	home := t.TempDir()
	copyTree(t, fixtureHome, home)
	ids, err := runs.List(home)
	if err != nil || len(ids) != 1 {
		t.Fatalf("fixture runs: %v %v", ids, err)
	}
	return home, ids[0]
}

func render(t *testing.T, rep *Report, format string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, rep, format); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// checkGolden compares rep rendered as HTML and Markdown with
// testdata/<name>.html and testdata/<name>.md, rewriting them first
// under -update.
func checkGolden(t *testing.T, rep *Report, name string) {
	t.Helper()
	for _, format := range []string{"html", "md"} {
		got := render(t, rep, format)
		golden := filepath.Join("testdata", name+"."+format)
		if *update {
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s report differs from %s (run with -update after checking the change)", format, golden)
		}
	}
}

func TestGolden(t *testing.T) {
	home, id := fixture(t)
	rep, err := Build(home, id)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Verified {
		t.Fatalf("fixture run does not verify: %v", rep.Problems)
	}
	checkGolden(t, rep, "report")
}

func TestHumanEvalModel(t *testing.T) {
	home, id := fixture(t)
	rep, err := Build(home, id)
	if err != nil {
		t.Fatal(err)
	}
	he := rep.HumanEval
	if he == nil || !he.ResultsFound || he.SelfCheck == nil || !he.SelfCheck.OK {
		t.Fatalf("humaneval section: %+v", he)
	}
	var order []string
	for _, r := range he.Rows {
		order = append(order, r.Task+"="+r.Status)
	}
	if got := strings.Join(order, " "); got != "HumanEval/0=pass HumanEval/2=partial HumanEval/10=fail" {
		t.Errorf("rows = %s", got)
	}
	r10 := he.Rows[2]
	if r10.Phase != "base" || !strings.HasSuffix(r10.FailingInput, "…") || len([]rune(r10.FailingInput)) != maxInputChars+1 {
		t.Errorf("failing input not cut to %d characters: %q", maxInputChars, r10.FailingInput)
	}
	if r2 := he.Rows[1]; r2.Phase != "plus" || r2.Reason != "wrong output" || r2.FailingInput != `[-1.5,"a"]` {
		t.Errorf("plus failure: %+v", r2)
	}
	p := rep.Provenance
	if p.ImageID == "" || p.ManifestDigest == "" || p.SBOMDigest == "" || p.HarnessDigest == "" || len(p.Assets) != 1 || len(p.Limits) == 0 {
		t.Errorf("provenance incomplete: %+v", p)
	}
	if len(charts(he)) != 3 {
		t.Errorf("want the pass/fail, time and pass-rate charts for n = 2")
	}
	if r0 := he.Rows[0]; r0.Seconds != 2.5 || r0.LimitSeconds != 9 {
		t.Errorf("HumanEval/0 time: want the phase closest to its limit (2.5 of 9 s), got %+v", r0)
	}
	if r10.Seconds != 12.3 || r10.LimitSeconds != 9 || he.Rows[1].LimitSeconds != 0 {
		t.Errorf("times: %+v %+v", r10, he.Rows[1])
	}
}

// TestHostileTextIsEscaped: a sample's text, a failing input or a reason
// holding markup shows as text in HTML and Markdown.
func TestHostileTextIsEscaped(t *testing.T) {
	home, id := fixture(t)
	rep, err := Build(home, id)
	if err != nil {
		t.Fatal(err)
	}
	html := render(t, rep, "html")
	if strings.Contains(html, "<script") || strings.Contains(html, "<img") || strings.Contains(html, "onerror=alert") && !strings.Contains(html, "&lt;img") {
		t.Fatalf("markup from the run folder reached the HTML unescaped")
	}
	if !strings.Contains(html, "&lt;script&gt;alert") {
		t.Fatalf("the hostile reason is not shown escaped")
	}
	md := render(t, rep, "md")
	if strings.Contains(md, "<script") || strings.Contains(md, "<img") || strings.Contains(md, "</td>") {
		t.Fatalf("markup from the run folder reached the Markdown unescaped")
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| HumanEval/10 ") && strings.Count(line, "|")-strings.Count(line, `\|`) != 8 {
			t.Errorf("a hostile cell broke the Markdown table: %s", line)
		}
	}
}

func TestTamperedRunIsNotVerified(t *testing.T) {
	for name, tamper := range map[string]func(dir string){
		"result changed": func(dir string) {
			p := filepath.Join(dir, "eval_results.json")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte(`"fail"`), []byte(`"pass"`), -1), 0o644)
		},
		"record edited": func(dir string) {
			p := filepath.Join(dir, "record.json")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte(`"passed": 3`), []byte(`"passed": 2`), 1), 0o644)
		},
		"signature removed": func(dir string) { os.Remove(filepath.Join(dir, "record.dsse.json")) },
	} {
		t.Run(name, func(t *testing.T) {
			home, id := fixture(t)
			tamper(filepath.Join(home, "runs", id))
			rep, err := Build(home, id)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verified || len(rep.Problems) == 0 {
				t.Fatalf("tampered run reported as verified")
			}
			html := render(t, rep, "html")
			if !strings.Contains(html, "NOT verified") || strings.Contains(html, "✔ verified") || !strings.Contains(html, rep.Problems[0].What[:10]) {
				t.Errorf("the HTML does not say NOT verified with the reason")
			}
			if md := render(t, rep, "md"); !strings.Contains(md, "**NOT verified**") {
				t.Errorf("the Markdown does not say NOT verified")
			}
		})
	}
}

// TestSymlinkOut: a results file replaced by a link out of the run folder is
// neither followed nor trusted.
func TestSymlinkOut(t *testing.T) {
	home, id := fixture(t)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte(`{"eval":{"SECRET/1":[{"base_status":"pass"}]}}`), 0o644)
	p := filepath.Join(home, "runs", id, "eval_results.json")
	os.Remove(p)
	if err := os.Symlink(secret, p); err != nil {
		t.Fatal(err)
	}
	rep, err := Build(home, id)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verified {
		t.Errorf("a run folder with a link out is reported verified")
	}
	if html := render(t, rep, "html"); strings.Contains(html, "SECRET") {
		t.Errorf("the report followed the link out of the run folder")
	}
}

func TestMissingRun(t *testing.T) {
	home, _ := fixture(t)
	for _, id := range []string{"humaneval-20990101", "", "../../etc"} {
		if _, err := Build(home, id); exitcode.Of(err) != exitcode.Usage {
			t.Errorf("Build(%q) = %v, want a usage error", id, err)
		}
	}
	if _, err := Build(t.TempDir(), "x"); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("Build in an empty home = %v, want a usage error", err)
	}
}

func TestUnreadableRecord(t *testing.T) {
	home, id := fixture(t)
	os.WriteFile(filepath.Join(home, "runs", id, "record.json"), []byte("{"), 0o644)
	if _, err := Build(home, id); exitcode.Of(err) != exitcode.Integrity {
		t.Errorf("Build with a broken record = %v, want an integrity error", err)
	}
}

func TestJSONDecodes(t *testing.T) {
	home, id := fixture(t)
	rep, err := Build(home, id)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	dec := json.NewDecoder(strings.NewReader(render(t, rep, "json")))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&back); err != nil {
		t.Fatal(err)
	}
	if back.Schema != Schema || !back.Verified || back.HumanEval == nil || len(back.HumanEval.Rows) != 3 || back.Provenance.ImageID != rep.Provenance.ImageID {
		t.Errorf("JSON report does not carry the model: %+v", back)
	}
	if err := Write(&bytes.Buffer{}, rep, "pdf"); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("unknown format: %v", err)
	}
}

// TestOtherKinds: a run of another kind gets its provenance and summary.
func TestOtherKinds(t *testing.T) {
	home := t.TempDir()
	r, err := runs.Create(home, "edm-fid")
	if err != nil {
		t.Fatal(err)
	}
	rec := r.NewRecord("test")
	rec.Summary = map[string]any{"fid": 1.97, "model": hostile}
	if err := r.Finish(rec, 1); err != nil {
		t.Fatal(err)
	}
	rep, err := Build(home, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Verified || rep.HumanEval != nil || len(rep.Summary) != 2 || rep.Run.Status != "negative" {
		t.Fatalf("report: %+v", rep)
	}
	html := render(t, rep, "html")
	if !strings.Contains(html, "1.97") || strings.Contains(html, "<script") {
		t.Errorf("summary missing or unescaped")
	}
}
