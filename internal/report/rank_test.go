package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/runimport"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/trust"
)

// rowOf is the row of run id on b (rows and references), or fails t.
func rowOf(t *testing.T, b *Board, id string) BoardRow {
	t.Helper()
	for _, r := range append(append([]BoardRow{}, b.Rows...), b.References...) {
		if r.RunID == id {
			return r
		}
	}
	t.Fatalf("run %s is not on the board: %v", id, labels(b))
	return BoardRow{}
}

func hasReason(r BoardRow, part string) bool {
	for _, s := range r.NotRankedReasons {
		if strings.Contains(s, part) {
			return true
		}
	}
	return false
}

// TestBoardRanksVerdictsNotClaims: a lab signs, with its own trusted key,
// a record whose summary claims 97.5% for results whose verdicts pass
// nothing and whose self-check failed. The board shows the verdicts'
// score, does not rank it, and says why; the honest run ranks first.
func TestBoardRanksVerdictsNotClaims(t *testing.T) {
	home := t.TempDir()
	greedy := map[string]any{"temperature": 0.0, "n": 1}
	honest := boardRun(t, home, 1, boardRunSpec{label: "honest", model: "org/honest", sampling: greedy, n: 1, base: 8, plus: 7, speed: 1})
	forged := boardRun(t, home, 2, boardRunSpec{label: "forged", model: "org/forged", sampling: greedy, n: 1, base: 0, plus: 0, speed: 1,
		edit: func(rec *runs.Record) {
			s := rec.Summary.(map[string]any)
			s["base_pass_at_k"] = map[string]float64{"pass@1": 0.975}
			s["plus_pass_at_k"] = map[string]float64{"pass@1": 0.975}
			rec.SelfCheck = map[string]any{"tasks": fixtureTasks, "passed": 3, "failures": []any{map[string]any{"task": "HumanEval/3", "phase": "base", "status": "fail"}}}
		}})
	ids, _ := runs.List(home)
	b, err := buildBoard(home, "humanevalplus-v0.1.10", ids, BoardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := labels(b); !slices.Equal(got, []string{"1:honest", "0:forged"}) {
		t.Fatalf("rows %v, want the honest run ranked and the forged one not", got)
	}
	f := rowOf(t, b, forged)
	if !f.Verified || f.Cell("plus", "pass@1") != "0.0%" || f.Cell("base", "pass@1") != "0.0%" {
		t.Errorf("the forged run shows base %s plus %s (verified %v), want its verdicts' 0.0%%", f.Cell("base", "pass@1"), f.Cell("plus", "pass@1"), f.Verified)
	}
	if !hasReason(f, "the record claims base pass@1 97.5%, the verdicts give 0.0%") || !hasReason(f, "self-check failed (3 of 12 tasks passed)") {
		t.Errorf("reasons %q", f.NotRankedReasons)
	}
	if h := rowOf(t, b, honest); h.Rank != 1 || len(h.NotRankedReasons) != 0 {
		t.Errorf("honest row %+v", h)
	}
}

// TestBoardDoesNotRankAShard: a shard's run of a sharded run, whose
// self-check checked some tasks on their base inputs only (the shard
// holding their first sample checked them in full), is shown but not
// ranked, saying why; the merged run is the one to rank.
func TestBoardDoesNotRankAShard(t *testing.T) {
	home := t.TempDir()
	greedy := map[string]any{"temperature": 0.0, "n": 1}
	shard := boardRun(t, home, 1, boardRunSpec{label: "shard", model: "org/shard", sampling: greedy, n: 1, base: 8, plus: 7, speed: 1,
		edit: func(rec *runs.Record) {
			rec.SelfCheck = map[string]any{"tasks": fixtureTasks, "passed": fixtureTasks, "base_only_tasks": []string{"HumanEval/0", "HumanEval/2"}}
		}})
	ids, _ := runs.List(home)
	b, err := buildBoard(home, "humanevalplus-v0.1.10", ids, BoardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := rowOf(t, b, shard); r.Rank != 0 || !hasReason(r, "self-check of 2 tasks on their base inputs only (a shard of a sharded run: rank the merged run)") {
		t.Errorf("the shard's row: rank %d, reasons %q", r.Rank, r.NotRankedReasons)
	}
}

// TestBoardSubsetRelabelled: a run of four tasks of another dataset whose
// record was re-signed to claim the whole dataset (summary, dataset,
// assets) is not ranked: its results name four tasks and the other
// dataset's hash.
func TestBoardSubsetRelabelled(t *testing.T) {
	home := t.TempDir()
	greedy := map[string]any{"temperature": 0.0, "n": 1}
	id := boardRun(t, home, 1, boardRunSpec{label: "mini-four", sampling: greedy, n: 1, base: 10, plus: 10, speed: 1})
	// Keep four tasks of the results and the Mini dataset's hash, then
	// re-sign a record that claims the whole dataset at 100%.
	r, err := runs.Open(home, id)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := r.ReadRecord()
	if err != nil {
		t.Fatal(err)
	}
	rewriteResults(t, r.Dir, func(res map[string]any) {
		res["hash"] = "401e75ad986361dccc7afecb4121e295"
		eval := res["eval"].(map[string]any)
		for k := range eval {
			if !slices.Contains([]string{"HumanEval/0", "HumanEval/1", "HumanEval/2", "HumanEval/3"}, k) {
				delete(eval, k)
			}
		}
	})
	if err := r.Finish(rec, 0); err != nil {
		t.Fatal(err)
	}
	b, err := buildBoard(home, "humanevalplus-v0.1.10", []string{id}, BoardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	row := rowOf(t, b, id)
	if row.Rank != 0 || !row.Verified || !hasReason(row, "a subset of the tasks: 4 of 12 scored") || !hasReason(row, "its results are of another dataset (md5 401e75ad9863") ||
		!hasReason(row, "the record claims 12 tasks, the results hold 4") {
		t.Errorf("relabelled subset: rank %d, reasons %q", row.Rank, row.NotRankedReasons)
	}
}

// TestBoardReferenceProfile: each way a genuine run can differ from the
// board's reference profile keeps it off the ranks, with its reason; the
// engine is named on the row.
func TestBoardReferenceProfile(t *testing.T) {
	greedy := map[string]any{"temperature": 0.0, "n": 1}
	for _, tc := range []struct {
		name   string
		spec   boardRunSpec
		reason string
	}{
		{"evalplus engine", boardRunSpec{engine: codebench.EngineEvalPlus}, `scored by engine "evalplus", not repro's`},
		{"base only", boardRunSpec{baseOnly: true}, "base tests only (--base-only)"},
		{"other image", boardRunSpec{edit: func(rec *runs.Record) {
			rec.Image = map[string]string{"id": "sha256:" + strings.Repeat("9", 64)}
		}}, "evaluator image 9999999999… is not the one this board admits"},
		{"other harness", boardRunSpec{edit: func(rec *runs.Record) {
			rec.Limits.(map[string]any)["harness_digest"] = "sha256:" + strings.Repeat("5", 64)
		}},
			"harness 5555555555… is not this repro's"},
		{"longer limits", boardRunSpec{edit: func(rec *runs.Record) {
			l := codebench.DefaultRunLimits()
			l.MinTimeLimit = 60
			rec.Limits.(map[string]any)["run"] = l
		}}, "run limits differ from the defaults: min_time_limit 60, default 4"},
		{"unpinned dataset", boardRunSpec{edit: func(rec *runs.Record) {
			rec.Assets = []runs.Asset{{ID: "humanevalplus-v0.1.10", SHA256: strings.Repeat("cd", 32)}}
		}}, "dataset asset humanevalplus-v0.1.10 is not at its catalog pin"},
		{"canonical", boardRunSpec{canonical: true}, "canonical solutions: a reference, not a model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			spec := tc.spec
			spec.label, spec.sampling, spec.n, spec.base, spec.plus, spec.speed = "run", greedy, 1, 10, 10, 1
			id := boardRun(t, home, 1, spec)
			b, err := buildBoard(home, "humanevalplus-v0.1.10", []string{id}, BoardOptions{})
			if err != nil {
				t.Fatal(err)
			}
			row := rowOf(t, b, id)
			if row.Rank != 0 || !hasReason(row, tc.reason) {
				t.Errorf("rank %d, reasons %q, want %q", row.Rank, row.NotRankedReasons, tc.reason)
			}
			if len(row.NotRankedReasons) != 1 && !spec.baseOnly {
				t.Errorf("reasons %q: want only %q", row.NotRankedReasons, tc.reason)
			}
			if want := "engine " + map[bool]string{true: "evalplus", false: "repro"}[spec.engine == codebench.EngineEvalPlus]; row.EngineText() != want {
				t.Errorf("engine %q, want %q", row.EngineText(), want)
			}
			if spec.canonical != (len(b.References) == 1 && len(b.Rows) == 0) {
				t.Errorf("canonical %v: %d rows, %d references", spec.canonical, len(b.Rows), len(b.References))
			}
		})
	}
	// Without a complete reference profile nothing ranks, and the board
	// says what is missing.
	home := t.TempDir()
	id := boardRun(t, home, 1, boardRunSpec{label: "run", sampling: greedy, n: 1, base: 10, plus: 10, speed: 1})
	b, err := BuildBoard(home, "humanevalplus-v0.1.10", []string{id}, BoardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if row := rowOf(t, b, id); row.Rank != 0 || !hasReason(row, "no reference profile: ") || len(b.Profile.Missing) == 0 {
		t.Errorf("a board without its dataset or image: rank %d, reasons %q, missing %q", row.Rank, row.NotRankedReasons, b.Profile.Missing)
	}
}

// TestBoardCanonicalApart: the canonical solutions score 100% but are
// listed apart, below the models, and the best model ranks first.
func TestBoardCanonicalApart(t *testing.T) {
	home := t.TempDir()
	greedy := map[string]any{"temperature": 0.0, "n": 1}
	model := boardRun(t, home, 1, boardRunSpec{label: "coder", sampling: greedy, n: 1, base: 6, plus: 5, speed: 1})
	canon := boardRun(t, home, 2, boardRunSpec{label: "canonical", sampling: greedy, n: 1, base: 10, plus: 10, speed: 1, canonical: true})
	ids, _ := runs.List(home)
	b, err := buildBoard(home, "humanevalplus-v0.1.10", ids, BoardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Rows) != 1 || b.Rows[0].RunID != model || b.Rows[0].Rank != 1 || len(b.References) != 1 || b.References[0].RunID != canon || b.References[0].Rank != 0 {
		t.Fatalf("rows %v, references %v", labels(b), b.References)
	}
	var buf strings.Builder
	if err := WriteBoard(&buf, b, staticLinks{defaultKey: b.Sort}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if i, j := strings.Index(page, `id="board"`), strings.Index(page, `id="reference-runs"`); i < 0 || j < i || strings.Index(page, `data-run="`+canon) < j {
		t.Errorf("the canonical run is not listed apart, below the models")
	}
}

// rewriteResults rewrites eval_results.json in dir through edit.
func rewriteResults(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, "eval_results.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	edit(res)
	if b, err = json.Marshal(res); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBoardRowsBelongToSigners: lab B files a genuine, better and newer
// run under lab A's label; the board keeps lab A's row (its own signer's
// label) and shows lab B's beside it, each ranked on its own score.
func TestBoardRowsBelongToSigners(t *testing.T) {
	greedy := map[string]any{"temperature": 0.0, "n": 1}
	labA, labB, home := t.TempDir(), t.TempDir(), t.TempDir()
	a := boardRun(t, labA, 1, boardRunSpec{label: "coder-7b", model: "org/coder-7b", sampling: greedy, n: 1, base: 6, plus: 5, speed: 1})
	b := boardRun(t, labB, 2, boardRunSpec{label: "coder-7b", model: "org/coder-7b", sampling: greedy, n: 1, base: 9, plus: 9, speed: 1})
	var keys []trust.Key
	var bundles []string
	for i, lab := range []struct{ home, id, name string }{{labA, a, "lab-a"}, {labB, b, "lab-b"}} {
		k, err := runs.LocalKey(lab.home)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, trust.NewKey(lab.name, k.PublicKey(), []trust.Purpose{trust.RunRecords}, nil, nil))
		bundles = append(bundles, filepath.Join(t.TempDir(), fmt.Sprint(i)+".tar"))
		if _, err := runs.Export(lab.home, lab.id, bundles[i]); err != nil {
			t.Fatal(err)
		}
	}
	tf := &trust.File{Version: trust.Version, Keys: keys}
	for _, bundle := range bundles {
		if _, err := runimport.Import(home, bundle, tf, "submitters.json"); err != nil {
			t.Fatal(err)
		}
	}
	ids, _ := runs.List(home)
	board, err := buildBoard(home, "humanevalplus-v0.1.10", ids, BoardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range board.Rows {
		got = append(got, fmt.Sprintf("%d:%s:%s", r.Rank, r.Label, r.Signer))
	}
	if !slices.Equal(got, []string{"1:coder-7b:lab-b", "2:coder-7b:lab-a"}) {
		t.Errorf("rows %v: want lab A's row and lab B's, each under its signer", got)
	}
	var names []string
	for _, tx := range board.Matrix.Texts {
		if tx.Anchor == "end" && tx.Class == "tick" {
			names = append(names, tx.Text)
		}
	}
	if !slices.Equal(names, []string{"coder-7b (lab-b)", "coder-7b (lab-a)"}) {
		t.Errorf("the matrix names the rows %q", names)
	}
}
