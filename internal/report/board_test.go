package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/runs/runstest"
)

// boardFixtureHome holds the signed runs of the board's tests and of the
// dashboard's browser test; -update-fixture writes it again.
const boardFixtureHome = "testdata/board-home"

var boardFixtureOnce sync.Once

// fixtureTasks is the synthetic dataset of the board's fixture runs: 12
// tasks standing for a whole dataset (the records say subset: false).
const fixtureTasks = 12

// boardRunSpec describes one fixture run: what it names, how many samples
// per task, how good it is (share of samples passing base, and plus of
// those), how fast, and whether its results are edited after signing.
type boardRunSpec struct {
	label, model string
	sampling     map[string]any
	n            int
	base, plus   int // out of 10
	speed        float64
	tamper       bool
	baseOnly     bool
	canonical    bool
	engine       string // "" for repro
	// edit changes the record before it is signed: a lab re-signing
	// what it wants with its own key.
	edit func(rec *runs.Record)
}

// boardRun writes one signed fixture run of spec under home through the
// runs API, as `repro score` leaves one, and returns its id.
func boardRun(t *testing.T, home string, seed int, spec boardRunSpec) string {
	t.Helper()
	r, err := runs.Create(home, "humaneval")
	if err != nil {
		t.Fatal(err)
	}
	eval := map[string][]map[string]any{}
	var baseCounts, plusCounts [][2]int
	samples := 0
	for i := range fixtureTasks {
		task := fmt.Sprintf("HumanEval/%d", i)
		cb, cp := 0, 0
		for j := range spec.n {
			samples++
			roll := (i*37 + j*11 + seed*7) % 100
			roll = min(max(roll+(i*29)%50-25, 0), 99) // tasks differ in difficulty
			b, p := roll < spec.base*10, roll < spec.plus*10
			status := func(ok bool) string {
				if ok {
					return "pass"
				}
				return "fail"
			}
			share := min(0.9, spec.speed*0.0004*float64(int(1)<<(i%12))*(1+0.1*float64(j%3)))
			e := map[string]any{"task_id": task, "solution": "def f():\n    return " + fmt.Sprint(i+j), "base_status": status(b),
				"base_fail_tests": []any{}, "plus_fail_tests": []any{}, "base_elapsed": 4 * share, "base_limit": 4.0}
			if !b {
				e["base_fail_tests"] = []any{[]any{i, "x"}}
				e["base_reason"] = "AssertionError"
			}
			if spec.baseOnly {
				e["plus_status"] = nil
			} else {
				e["plus_status"] = status(p)
				e["plus_elapsed"], e["plus_limit"] = 9*share, 9.0
				if b && !p {
					e["plus_fail_tests"] = []any{[]any{-i, "y"}}
					e["plus_reason"] = "wrong output"
				}
			}
			if b {
				cb++
			}
			if p {
				cp++
			}
			eval[task] = append(eval[task], e)
		}
		baseCounts = append(baseCounts, [2]int{spec.n, cb})
		plusCounts = append(plusCounts, [2]int{spec.n, cp})
	}
	passAt := func(counts [][2]int) map[string]float64 {
		out := map[string]float64{}
		for _, k := range []int{1, 10, 100} {
			if spec.n < k {
				continue
			}
			sum := 0.0
			for _, c := range counts {
				sum += codebench.EstimatePassAtK(c[0], c[1], k)
			}
			out[fmt.Sprintf("pass@%d", k)] = sum / float64(len(counts))
		}
		return out
	}
	summary := map[string]any{"tasks": fixtureTasks, "samples": samples, "base_pass_at_k": passAt(baseCounts), "plus_scored": !spec.baseOnly, "subset": false}
	if !spec.baseOnly {
		summary["plus_pass_at_k"] = passAt(plusCounts)
	}
	b, _ := json.MarshalIndent(map[string]any{"date": "2026-03-01 12:00", "hash": "fe585eb4df8c88d844eeb463ea4d0302", "eval": eval}, "", " ")
	if err := os.WriteFile(filepath.Join(r.Dir, "eval_results.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	rec := r.NewRecord("v0.0.0-fixture")
	rec.Command = []string{"repro", "humaneval", "--samples", spec.label + ".jsonl", "--label", spec.label}
	rec.Host = runs.Host{Hostname: "lab-1", OS: "linux", Arch: "amd64", Kernel: "6.1.0", CPUModel: "Example CPU", CPUs: 2, MemBytes: 24 << 30}
	rec.Repro.Go = "go1.26"
	rec.Assets = []runs.Asset{{ID: "humanevalplus-v0.1.10", SHA256: strings.Repeat("ab", 32), Size: 1234}}
	rec.Image = map[string]string{"id": "sha256:" + strings.Repeat(fmt.Sprint(1+seed%2), 64), "manifest_digest": "sha256:" + strings.Repeat("2", 64)}
	rec.Limits = map[string]any{"run": codebench.DefaultRunLimits(), "harness_digest": fixtureHarness, "parallel": 2, "base_only": spec.baseOnly}
	rec.SelfCheck = map[string]any{"tasks": fixtureTasks, "passed": fixtureTasks}
	rec.Summary = summary
	if spec.engine == "" {
		spec.engine = codebench.EngineRepro
	}
	extra := map[string]any{"dataset": "HumanEvalPlus-v0.1.10", "dataset_md5": "fe585eb4df8c88d844eeb463ea4d0302", "label": spec.label,
		"engine": spec.engine, "canonical": spec.canonical,
		"samples": map[string]any{"path": spec.label + ".jsonl", "sha256": strings.Repeat(fmt.Sprintf("%x", seed%16), 64), "samples": samples}}
	if spec.model != "" {
		extra["model"] = spec.model
	}
	if spec.sampling != nil {
		extra["sampling"] = spec.sampling
	}
	rec.Extra = extra
	if spec.edit != nil {
		spec.edit(rec)
	}
	if err := r.Finish(rec, 0); err != nil {
		t.Fatal(err)
	}
	if spec.tamper {
		// Claim a better score than the record was signed with.
		p := filepath.Join(r.Dir, "record.json")
		var edited map[string]any
		b, _ := os.ReadFile(p)
		if err := json.Unmarshal(b, &edited); err != nil {
			t.Fatal(err)
		}
		edited["summary"].(map[string]any)["base_pass_at_k"] = map[string]float64{"pass@1": 0.97}
		edited["summary"].(map[string]any)["plus_pass_at_k"] = map[string]float64{"pass@1": 0.95}
		b, _ = json.MarshalIndent(edited, "", "  ")
		os.WriteFile(p, append(b, '\n'), 0o644)
	}
	time.Sleep(1100 * time.Millisecond) // one run id per second, finish times in order
	return r.ID
}

// fixtureHarness is the harness digest of the fixture runs.
var fixtureHarness = "sha256:" + strings.Repeat("4", 64)

// fixtureReference is the reference profile the fixture runs match: the
// 12 synthetic tasks, the fixture's asset pin and dataset hash, repro's
// engine, the two fixture images, the fixture harness, default limits.
func fixtureReference() *codebench.Reference {
	ref := &codebench.Reference{Dataset: "humanevalplus-v0.1.10", Assets: []runs.Asset{{ID: "humanevalplus-v0.1.10", SHA256: strings.Repeat("ab", 32), Size: 1234}},
		DatasetMD5: "fe585eb4df8c88d844eeb463ea4d0302", Engine: codebench.EngineRepro, Harness: fixtureHarness, Limits: codebench.DefaultRunLimits(),
		Images: []string{"sha256:" + strings.Repeat("1", 64), "sha256:" + strings.Repeat("2", 64)}}
	for i := range fixtureTasks {
		ref.Tasks = append(ref.Tasks, fmt.Sprintf("HumanEval/%d", i))
	}
	return ref
}

// buildBoard is BuildBoard against the fixture's reference profile.
func buildBoard(home, dataset string, ids []string, o BoardOptions) (*Board, error) {
	return CollectBoardWith(home, dataset, ids, fixtureReference()).Board(o)
}

// writeBoardFixture makes the board's fixture home: five runs of four
// labels, one of them edited after it was signed.
func writeBoardFixture(t *testing.T) {
	home := t.TempDir()
	greedy := map[string]any{"temperature": 0.0, "n": 1}
	boardRun(t, home, 1, boardRunSpec{label: "coder-7b", model: "org/coder-7b", sampling: greedy, n: 1, base: 5, plus: 4, speed: 1})
	boardRun(t, home, 2, boardRunSpec{label: "tiny-1b", model: "org/tiny-1b", sampling: greedy, n: 1, base: 3, plus: 2, speed: 0.5})
	boardRun(t, home, 3, boardRunSpec{label: "coder-7b-t0.8", model: "org/coder-7b", n: 10, base: 6, plus: 5, speed: 1.5,
		sampling: map[string]any{"temperature": 0.8, "n": 10, "top_p": 0.95}})
	boardRun(t, home, 4, boardRunSpec{label: "coder-7b", model: "org/coder-7b", sampling: greedy, n: 1, base: 8, plus: 6, speed: 1})
	boardRun(t, home, 5, boardRunSpec{label: "edited-results", model: "org/unknown", sampling: greedy, n: 1, base: 2, plus: 1, speed: 2, tamper: true})
	if err := os.RemoveAll(boardFixtureHome); err != nil {
		t.Fatal(err)
	}
	copyTree(t, filepath.Join(home, "runs"), filepath.Join(boardFixtureHome, "runs"))
	copyTree(t, filepath.Join(home, "keys", "run-signing.pub"), filepath.Join(boardFixtureHome, "keys", "run-signing.pub"))
	copyTree(t, filepath.Join(home, "trust.json"), filepath.Join(boardFixtureHome, "trust.json"))
}

// boardFixture returns a private copy of the board's fixture home and its
// run ids, oldest first.
func boardFixture(t *testing.T) (string, []string) {
	t.Helper()
	if *updateFixture {
		boardFixtureOnce.Do(func() { writeBoardFixture(t) })
	}
	home := t.TempDir()
	copyTree(t, boardFixtureHome, home)
	ids, err := runs.List(home)
	if err != nil || len(ids) != 5 {
		t.Fatalf("board fixture runs: %v %v", ids, err)
	}
	return home, ids
}

func labels(b *Board) []string {
	var out []string
	for _, r := range b.Rows {
		out = append(out, fmt.Sprintf("%d:%s", r.Rank, r.Label))
	}
	return out
}

// TestBoard: one row per label, its newest verified run; ranked by plus
// pass@1 among verified runs; the run edited after signing shown, NOT
// verified, never ranked, although it claims the best score.
func TestBoard(t *testing.T) {
	home, ids := boardFixture(t)
	b, err := buildBoard(home, "humanevalplus-v0.1.10", ids, BoardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := labels(b), []string{"1:coder-7b", "2:coder-7b-t0.8", "3:tiny-1b", "0:edited-results"}; !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	top, edited := b.Rows[0], b.Rows[3]
	if top.RunID != ids[3] || top.Others != 1 || !top.Verified || top.Signer != "local" || top.Model != "org/coder-7b" || top.Sampling != "temperature=0,n=1" {
		t.Errorf("coder-7b row: %+v", top)
	}
	if edited.Verified || !strings.HasPrefix(edited.NotRanked, "NOT verified") || !strings.Contains(edited.Problem, "record.json") {
		t.Errorf("edited row: %+v", edited)
	}
	if v, _ := edited.Score("plus"); v >= 0.95 || v >= top.Plus["pass@1"] {
		t.Errorf("the edited run shows %v, the score its record claims, not its verdicts'", v)
	}
	if !slices.Equal(b.PassK, []string{"pass@10"}) || b.Rows[1].Cell("plus", "pass@10") == "–" || b.Rows[0].Cell("plus", "pass@10") != "–" {
		t.Errorf("pass@10: %v, %q %q", b.PassK, b.Rows[1].Cell("plus", "pass@10"), b.Rows[0].Cell("plus", "pass@10"))
	}
	if b.Rows[1].SamplesPerTask() != "10" || b.Rows[0].SamplesPerTask() != "1" {
		t.Errorf("samples per task: %q %q", b.Rows[1].SamplesPerTask(), b.Rows[0].SamplesPerTask())
	}

	all, err := buildBoard(home, "HumanEvalPlus-v0.1.10", ids, BoardOptions{All: true})
	if err != nil || len(all.Rows) != 5 {
		t.Fatalf("every run: %v %v", labels(all), err)
	}
	if got := labels(all); got[0] != "1:coder-7b" || got[2] != "3:coder-7b" {
		t.Errorf("every run, by rank: %v (the older coder-7b run ranks on its own score)", got)
	}

	for _, tc := range []struct {
		o    BoardOptions
		want []string
	}{
		{BoardOptions{Sort: "label"}, []string{"1:coder-7b", "2:coder-7b-t0.8", "0:edited-results", "3:tiny-1b"}},
		{BoardOptions{Sort: "label", Order: "desc"}, []string{"3:tiny-1b", "0:edited-results", "2:coder-7b-t0.8", "1:coder-7b"}},
		{BoardOptions{Sort: "plus", Order: "asc"}, []string{"3:tiny-1b", "2:coder-7b-t0.8", "1:coder-7b", "0:edited-results"}},
		{BoardOptions{Sort: "plus@10"}, []string{"1:coder-7b-t0.8", "0:coder-7b", "0:tiny-1b", "0:edited-results"}},
		{BoardOptions{Sort: "samples"}, []string{"2:coder-7b-t0.8", "0:edited-results", "1:coder-7b", "3:tiny-1b"}},
		{BoardOptions{Sort: "date"}, []string{"0:edited-results", "1:coder-7b", "2:coder-7b-t0.8", "3:tiny-1b"}},
	} {
		b, err := buildBoard(home, "HumanEvalPlus-v0.1.10", ids, tc.o)
		if err != nil {
			t.Fatal(err)
		}
		if got := labels(b); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.o, got, tc.want)
		}
	}
	for _, o := range []BoardOptions{{Sort: "score"}, {Sort: "plus@5"}, {Sort: "plus@1"}, {Order: "up"}} {
		if _, err := buildBoard(home, "HumanEvalPlus-v0.1.10", ids, o); exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%+v: %v, want a usage error", o, err)
		}
	}
	if b, err := buildBoard(home, "MbppPlus-v0.2.0", ids, BoardOptions{}); err != nil || len(b.Rows) != 0 {
		t.Errorf("another dataset: %v %v", labels(b), err)
	}
}

// TestBoardMatrix: the matrix shows the verified rows, every task, base
// and plus halves, and names task and label on hover.
func TestBoardMatrix(t *testing.T) {
	home, ids := boardFixture(t)
	b, err := buildBoard(home, "HumanEvalPlus-v0.1.10", ids, BoardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := b.Matrix
	if m == nil || len(m.Legend) != 4 {
		t.Fatalf("matrix: %+v", m)
	}
	var rowLabels []string
	for _, tx := range m.Texts {
		if tx.Anchor == "end" && tx.Class == "tick" {
			rowLabels = append(rowLabels, tx.Text)
		}
	}
	if !slices.Equal(rowLabels, []string{"coder-7b", "coder-7b-t0.8", "tiny-1b"}) {
		t.Errorf("matrix rows %v: want the verified rows only, in board order", rowLabels)
	}
	if len(m.Rects) != 3*fixtureTasks*2 {
		t.Errorf("%d cells, want %d (3 runs × %d tasks × base and plus)", len(m.Rects), 3*fixtureTasks*2, fixtureTasks)
	}
	for _, r := range m.Rects {
		if !regexp.MustCompile(`^HumanEval/\d+ · [a-z0-9.-]+: base \d+/\d+, base and plus \d+/\d+$`).MatchString(r.Title) {
			t.Errorf("cell title %q", r.Title)
			break
		}
	}
}

// TestBoardGolden: the board page, with the links of a static export.
func TestBoardGolden(t *testing.T) {
	home, ids := boardFixture(t)
	b, err := buildBoard(home, "HumanEvalPlus-v0.1.10", ids, BoardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteBoard(&buf, b, staticLinks{defaultKey: b.Sort}); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "board.html")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if buf.String() != string(want) {
		t.Errorf("board differs from %s (run with -update after checking the change)", golden)
	}
}

var hrefs = regexp.MustCompile(`href="([^"]*)"`)

// TestExportBoard: the static export is self-contained: every link on
// every page leads to a page it wrote, and no page carries a script or
// loads anything.
func TestExportBoard(t *testing.T) {
	home, ids := boardFixture(t)
	files := map[string][]byte{}
	names, err := ExportBoardWith(home, "HumanEvalPlus-v0.1.10", ids, fixtureReference(), func(name string, data []byte) error {
		if _, dup := files[name]; dup || strings.ContainsAny(name, `/\`) {
			t.Errorf("file %q written twice or not a plain name", name)
		}
		files[name] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range append([]string{"index.html", "all.html", "newest-by-label-asc.html", "all-by-plus-at-10-desc.html"}, runPages(ids)...) {
		if _, ok := files[want]; !ok {
			t.Errorf("export lacks %s (wrote %v)", want, names)
		}
	}
	for name, data := range files {
		page := string(data)
		if strings.Contains(page, "<script") || strings.Contains(page, "src=") || !strings.Contains(page, "default-src 'none'") {
			t.Errorf("%s: a script, a loaded resource or no CSP", name)
		}
		for _, m := range hrefs.FindAllStringSubmatch(page, -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if _, ok := files[target]; !ok && target != "" {
				t.Errorf("%s links to %q, which the export did not write", name, m[1])
			}
		}
	}
	if !strings.Contains(string(files["index.html"]), `id="matrix"`) || strings.Contains(string(files["newest-by-label-asc.html"]), `id="matrix"`) {
		t.Errorf("the matrix belongs on index.html, and only a link to it on the other orders")
	}
	if _, err := ExportBoard(home, "MbppPlus-v0.2.0", ids, func(string, []byte) error { return nil }); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "HumanEvalPlus-v0.1.10") {
		t.Errorf("export of a dataset without runs: %v", err)
	}
}

func runPages(ids []string) []string {
	var out []string
	for _, id := range ids {
		out = append(out, id+".html")
	}
	return out
}

// TestCollectBoardOfChecksEachRun: ids a run index names as the runs of a
// dataset make the same board as the run folders do; a run among them of
// another dataset is still passed over, by its verified record.
func TestCollectBoardOfChecksEachRun(t *testing.T) {
	home, ids := boardFixture(t)
	other := runstest.HumanEvalRun(t, home, []runstest.Sample{{Task: "HumanEval/0", Pass: true}}, runstest.HumanEvalOptions{Dataset: "MbppPlus-v0.2.0", Label: "elsewhere"})
	all := append(append([]string{}, ids...), other)
	want, err := CollectBoardContext(context.Background(), home, "HumanEvalPlus-v0.1.10", all, fixtureReference())
	if err != nil {
		t.Fatal(err)
	}
	got, err := CollectBoardOf(context.Background(), home, "HumanEvalPlus-v0.1.10", all, fixtureReference())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []BoardOptions{{}, {All: true}} {
		a, _ := want.Board(o)
		b, _ := got.Board(o)
		if !slices.Equal(labels(a), labels(b)) || len(b.Rows) == 0 || len(a.Notes) != len(b.Notes) {
			t.Errorf("%+v: CollectBoardOf %v %q, the folders %v %q", o, labels(b), b.Notes, labels(a), a.Notes)
		}
		for _, r := range b.Rows {
			if r.RunID == other {
				t.Errorf("%+v: the run of another dataset is on the board", o)
			}
		}
	}
}
