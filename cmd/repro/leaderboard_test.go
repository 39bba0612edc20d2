package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs/runstest"
)

// labBundle makes a run labelled label in a lab's own home, exports it,
// and returns the bundle and the lab's trust entry (as `repro keys export
// --trust-file` prints it) renamed to name.
func labBundle(t *testing.T, label, name string) (bundle string, entry map[string]any) {
	t.Helper()
	lab := t.TempDir()
	id := runstest.HumanEvalRun(t, lab, []runstest.Sample{{Task: "HumanEval/0", Pass: true}, {Task: "HumanEval/1", Pass: label != "model-c", FailingInput: `[1]`, Reason: "AssertionError"}},
		runstest.HumanEvalOptions{Label: label, Model: "org/" + label})
	env := []string{"REPRO_HOME=" + lab}
	bundle = filepath.Join(t.TempDir(), label+".tar")
	if r := repro(t, env, "runs", "export", id, "--out", bundle); r.code != 0 {
		t.Fatalf("runs export: %d %s", r.code, r.stderr)
	}
	r := repro(t, env, "keys", "export", "--trust-file")
	var tf struct {
		Keys []map[string]any `json:"keys"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &tf) != nil || len(tf.Keys) != 1 {
		t.Fatalf("keys export --trust-file: %d %s", r.code, r.stdout)
	}
	tf.Keys[0]["name"] = name
	return bundle, tf.Keys[0]
}

// TestMaintainerFlow: three bundles arrive from three labs; one command
// imports them against the maintainer's trust file of submitters, one
// lists them, one writes the board. A fourth bundle, edited on the way,
// is refused and the others are still imported.
func TestMaintainerFlow(t *testing.T) {
	var keys []map[string]any
	var bundles []string
	for _, l := range [][2]string{{"model-a", "lab-a"}, {"model-b", "lab-b"}, {"model-c", "lab-c"}} {
		b, k := labBundle(t, l[0], l[1])
		bundles, keys = append(bundles, b), append(keys, k)
	}
	submitters := filepath.Join(t.TempDir(), "submitters.json")
	tb, _ := json.Marshal(map[string]any{"version": 1, "keys": keys})
	os.WriteFile(submitters, tb, 0o644)
	home := t.TempDir()
	env := []string{"REPRO_HOME=" + home}

	r := repro(t, env, append(append([]string{"runs", "import"}, bundles...), "--trust", submitters)...)
	if r.code != 0 || len(importedAs.FindAllString(r.stdout, -1)) != 3 {
		t.Fatalf("runs import: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if again := repro(t, env, "runs", "import", bundles[0], "--trust", submitters); again.code != 0 || !strings.Contains(again.stdout, "already here") {
		t.Errorf("importing a bundle again: %d %s %s", again.code, again.stdout, again.stderr)
	}

	rows, lr := listRuns(t, home, "--label", "model-b")
	if lr.code != 0 || len(rows) != 1 || rows[0]["model"] != "org/model-b" {
		t.Fatalf("runs list --label model-b: %d %v %s", lr.code, rows, lr.stderr)
	}
	id := rows[0]["id"].(string)
	if v := repro(t, env, "runs", "verify", id); v.code != 0 || !strings.Contains(v.stdout, `signed by trusted key "lab-b"`) {
		t.Errorf("runs verify of an imported run: %d %s %s", v.code, v.stdout, v.stderr)
	}
	if rows, _ := listRuns(t, home, "--model", "org/model-c"); len(rows) != 1 {
		t.Errorf("runs list --model: %v", rows)
	}

	site := filepath.Join(t.TempDir(), "site")
	r = repro(t, env, "report", "--leaderboard", "humanevalplus-v0.1.10", "--out", site)
	if r.code != 0 || !strings.Contains(r.stderr, "open index.html") {
		t.Fatalf("report --leaderboard: %d %s", r.code, r.stderr)
	}
	index, err := os.ReadFile(filepath.Join(site, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(index)
	for _, want := range []string{"signed by lab-a", "signed by lab-b", "signed by lab-c", "org/model-b"} {
		if !strings.Contains(page, want) {
			t.Errorf("board lacks %q", want)
		}
	}
	if strings.Count(page, "✔ verified</span>") != 3 || strings.Contains(page, `class="unverified"`) {
		t.Errorf("board: want three verified runs")
	}
	if _, err := os.Stat(filepath.Join(site, id+".html")); err != nil {
		t.Errorf("no page for run %s: %v", id, err)
	}

	// A bundle edited on the way is refused; the good one beside it is
	// imported; the exit status is 4.
	signed, _ := labBundle(t, "model-d", "lab-a")
	edited := filepath.Join(t.TempDir(), "model-d.tar")
	rewriteTar(t, signed, edited, func(name string, r io.Reader) []byte {
		if name != "run/record.json" {
			return nil
		}
		b, _ := io.ReadAll(r)
		return []byte(strings.Replace(string(b), `"pass@1": 0.5`, `"pass@1": 0.99`, 1))
	})
	good, k := labBundle(t, "model-e", "lab-e")
	keys = append(keys, k)
	tb, _ = json.Marshal(map[string]any{"version": 1, "keys": keys})
	os.WriteFile(submitters, tb, 0o644)
	r = repro(t, env, "runs", "import", edited, good, "--trust", submitters, "--json")
	var doc struct {
		Bundles []struct {
			Bundle, Error, ID string
		}
	}
	if r.code != int(exitcode.Integrity) || json.Unmarshal([]byte(r.stdout), &doc) != nil || len(doc.Bundles) != 2 || doc.Bundles[0].Error == "" || doc.Bundles[1].ID == "" {
		t.Fatalf("import of an edited and a good bundle: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if rows, _ := listRuns(t, home, "--label", "model-d"); len(rows) != 0 {
		t.Errorf("the edited bundle was imported")
	}
	for _, args := range [][]string{
		{"runs", "import"}, {"runs", "import", filepath.Join(t.TempDir(), "missing.tar")},
		{"report", "--leaderboard", "humanevalplus-v0.1.10"}, {"report", "--leaderboard", "MbppPlus-v0.2.0", "--out", t.TempDir()},
		{"report", "--leaderboard", "humanevalplus-v0.1.10", "--out", filepath.Join(home, "runs", id)},
		{"runs", "list", "--sampling", "n=0"},
	} {
		if r := repro(t, env, args...); r.code != int(exitcode.Usage) {
			t.Errorf("repro %v: exit %d, want 2\n%s", args, r.code, r.stderr)
		}
	}
	if r := repro(t, []string{"REPRO_HOME=" + t.TempDir()}, "runs", "import", good); r.code != int(exitcode.Precondition) {
		t.Errorf("runs import without a trust file: exit %d, want 3", r.code)
	}
}

// importedAs reads a line of runs import: the run id its record names and
// the id it was imported as.
var importedAs = regexp.MustCompile(`: run (\S+) imported as (\S+) \(humaneval, \d+ files\), signed by trusted key "`)

var labelLine = regexp.MustCompile(`(?m)^label: "([^"]*)", model "([^"]*)", sampling (\S+)$`)

// TestHumanEvalLabelOnTheBoard: a real sandboxed run names its label,
// model and sampling; runs list finds it by them; the board shows it
// verified, not ranked because it scored a subset of the tasks; and the
// same run, exported and imported into another home, shows there under
// the name the maintainer gave its key.
func TestHumanEvalLabelOnTheBoard(t *testing.T) {
	home := humanevalHome(t, true)
	env := []string{"REPRO_HOME=" + home}
	example := filepath.Join("..", "..", "examples", "humaneval-samples.jsonl")
	r := repro(t, env, "humaneval", "--samples", example, "--tasks", "0,2", "--label", "example-cheats", "--model", "handwritten",
		"--sampling", "temperature=0,n=3")
	if r.code != 0 {
		t.Fatalf("humaneval: exit %d: %s", r.code, r.stderr)
	}
	if m := labelLine.FindStringSubmatch(r.stdout); m == nil || m[1] != "example-cheats" || m[3] != "temperature=0,n=3" {
		t.Errorf("humaneval output does not name the label:\n%s", r.stdout)
	}
	rows, lr := listRuns(t, home, "--label", "example-cheats", "--sampling", "n=3", "--limit", "1")
	if lr.code != 0 || len(rows) != 1 || rows[0]["model"] != "handwritten" {
		t.Fatalf("runs list --label: %d %v %s", lr.code, rows, lr.stderr)
	}
	id := rows[0]["id"].(string)
	site := filepath.Join(t.TempDir(), "site")
	if r := repro(t, env, "report", "--leaderboard", "HumanEvalPlus-v0.1.10", "--out", site); r.code != 0 {
		t.Fatalf("report --leaderboard: %d %s", r.code, r.stderr)
	}
	index, _ := os.ReadFile(filepath.Join(site, "all.html"))
	row := regexp.MustCompile(`(?s)<tr class="unranked" data-run="` + id + `">.*?</tr>`).FindString(string(index))
	if !strings.Contains(row, "example-cheats") || !strings.Contains(row, "not ranked: a subset of the tasks") || !strings.Contains(row, "✔ verified") ||
		!strings.Contains(row, "temperature=0, n=3") || !strings.Contains(row, "signed by local") {
		t.Errorf("the real run's row on the board:\n%s", row)
	}

	bundle := filepath.Join(t.TempDir(), "run.tar")
	if r := repro(t, env, "runs", "export", id, "--out", bundle); r.code != 0 {
		t.Fatalf("runs export: %d %s", r.code, r.stderr)
	}
	tr := repro(t, env, "keys", "export", "--trust-file")
	trustFile := filepath.Join(t.TempDir(), "lab.json")
	os.WriteFile(trustFile, []byte(strings.Replace(tr.stdout, `"name": "local"`, `"name": "ci-lab"`, 1)), 0o644)
	other := []string{"REPRO_HOME=" + t.TempDir()}
	r = repro(t, other, "runs", "import", bundle, "--trust", trustFile)
	m := importedAs.FindStringSubmatch(r.stdout)
	if r.code != 0 || !strings.Contains(r.stdout, `"ci-lab"`) || m == nil || m[1] != id {
		t.Fatalf("runs import: %d %s %s", r.code, r.stdout, r.stderr)
	}
	rep := repro(t, other, "report", m[2], "--format", "json")
	var doc struct {
		Verified bool
		Signer   struct{ Name string }
		Subject  struct{ Label, Model string }
	}
	if rep.code != 0 || json.Unmarshal([]byte(rep.stdout), &doc) != nil || !doc.Verified || doc.Signer.Name != "ci-lab" || doc.Subject.Label != "example-cheats" {
		t.Errorf("report of the imported run: %d %+v %s", rep.code, doc, rep.stderr)
	}
}
