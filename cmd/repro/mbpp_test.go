package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/runs/runstest"
	"github.com/reprolab/repro/internal/testenv"
)

// The MBPP+ canonical solutions pass every input, Mbpp/255 (1.66 M tuples
// for one input) included, and the results file carries EvalPlus's hash of
// MBPP+ v0.2.0.
func TestMBPPCanonical(t *testing.T) {
	home := humanevalHome(t, true)
	env := []string{"REPRO_HOME=" + home}
	r := repro(t, env, "humaneval", "--dataset", "mbppplus", "--canonical", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	h := parseHumanEvalJSON(t, r)
	if h.Summary == nil || h.Summary.Samples != 378 || h.Summary.BasePassAtK["pass@1"] != 1 || h.Summary.PlusPassAtK["pass@1"] != 1 {
		t.Fatalf("summary %+v", h.Summary)
	}
	if h.SelfCheck == nil || h.SelfCheck.Passed != 378 || h.SelfCheck.Tasks != 378 {
		t.Fatalf("self-check %+v", h.SelfCheck)
	}
	var res struct {
		Hash string                       `json:"hash"`
		Eval map[string][]json.RawMessage `json:"eval"`
	}
	b, err := os.ReadFile(h.ResultsFile)
	if err != nil || json.Unmarshal(b, &res) != nil || len(res.Eval) != 378 || res.Hash != "ee43ecabebf20deef4bb776a405ac5b1" {
		t.Fatalf("results file %s: %v, %d tasks, hash %q", h.ResultsFile, err, len(res.Eval), res.Hash)
	}
	if _, ok := res.Eval["Mbpp/255"]; !ok {
		t.Fatal("no Mbpp/255 in the results")
	}
	if v := repro(t, env, "runs", "verify", h.RunID); v.code != 0 {
		t.Fatalf("runs verify: %d %s %s", v.code, v.stdout, v.stderr)
	}
	runstest.Verified(t, h.RunDir) // the in-toto statement, checked independently
}

// mbppExample is one line of examples/mbpp-samples.jsonl: a sample and the
// verdicts (base/plus) it must get, from repro and from EvalPlus's own
// code where they differ.
type mbppExample struct {
	TaskID         string `json:"task_id"`
	Note           string `json:"note"`
	Expect         string `json:"expect"`
	ExpectEvalPlus string `json:"expect_evalplus"`
}

const mbppExampleTasks = "2,88,124,404,558,581,737,793"

func readMBPPExamples(t *testing.T, path string) map[string][]mbppExample {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]mbppExample{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var e mbppExample
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		out[e.TaskID] = append(out[e.TaskID], e)
	}
	return out
}

// checkVerdicts compares the results file verdict by verdict with the
// examples' expectations; evalplus selects EvalPlus's expectations.
func checkVerdicts(t *testing.T, resultsFile string, ex map[string][]mbppExample, evalplus bool) map[string][]string {
	t.Helper()
	res := readEvalResults(t, resultsFile)
	got := map[string][]string{}
	n := 0
	for task, entries := range ex {
		if len(res.Eval[task]) != len(entries) {
			t.Errorf("%s: %d results for %d samples", task, len(res.Eval[task]), len(entries))
			continue
		}
		for i, e := range entries {
			r := res.Eval[task][i]
			v := r.BaseStatus + "/" + r.PlusStatus
			got[task] = append(got[task], v)
			want := e.Expect
			if evalplus && e.ExpectEvalPlus != "" {
				want = e.ExpectEvalPlus
			}
			if v != want {
				t.Errorf("%s sample %d (%s): %s, want %s", task, i, e.Note, v, want)
			}
			n++
		}
	}
	if n != 21 {
		t.Errorf("%d verdicts compared, the file has 21 samples", n)
	}
	return got
}

// The example samples (correct, wrong, slow and cheating samples over the
// tasks with special rules) get the verdicts they name; with
// REPRO_TEST_EVALPLUS_TREE, EvalPlus's own scoring core gets the same ones,
// verdict by verdict, but for the always-equal object it lets pass.
func TestMBPPExampleSamplesAgreeWithEvalPlus(t *testing.T) {
	home := humanevalHome(t, true)
	env := []string{"REPRO_HOME=" + home}
	example := filepath.Join("..", "..", "examples", "mbpp-samples.jsonl")
	ex := readMBPPExamples(t, example)
	r := repro(t, env, "humaneval", "--dataset", "mbppplus", "--samples", example, "--tasks", mbppExampleTasks, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mine := checkVerdicts(t, parseHumanEvalJSON(t, r).ResultsFile, ex, false)

	tree := testenv.Getenv(t, "REPRO_TEST_EVALPLUS_TREE", "a checkout of evalplus at 26d6d00 (scripts/test.sh uses ../shared/engines/evalplus-26d6d00)")
	r = repro(t, env, "humaneval", "--dataset", "mbppplus", "--engine", "evalplus", "--evalplus-tree", tree,
		"--samples", example, "--tasks", mbppExampleTasks, "--json")
	if r.code != 0 {
		t.Fatalf("--engine evalplus: exit %d: %s", r.code, r.stderr)
	}
	h := parseHumanEvalJSON(t, r)
	if h.SelfCheck == nil || h.SelfCheck.Passed != 8 {
		t.Errorf("EvalPlus's self-check %+v", h.SelfCheck)
	}
	theirs := checkVerdicts(t, h.ResultsFile, ex, true)
	differ := 0
	for task, vs := range mine {
		for i := range vs {
			if vs[i] != theirs[task][i] {
				differ++
				if ex[task][i].ExpectEvalPlus == "" {
					t.Errorf("%s sample %d: repro %s, EvalPlus %s", task, i, vs[i], theirs[task][i])
				}
			}
		}
	}
	if differ != 1 {
		t.Errorf("%d verdicts differ, want 1 (the always-equal object)", differ)
	}
}

// Mbpp/255's largest outputs travel as digests (docs/mbpp.md): an equal
// output built another way (new str objects, new tuples) passes; objects
// that print like the expected strings and equal anything, and lists in
// place of tuples, fail.
func TestMBPPHugeOutputDigests(t *testing.T) {
	home := humanevalHome(t, true)
	env := []string{"REPRO_HOME=" + home}
	samples := writeSamples(t,
		sampleLine("Mbpp/255", "import itertools\ndef combinations_colors(l, n):\n    fresh = [(s + '.')[:-1] if type(s) is str else s for s in l]\n    return [tuple(c) for c in itertools.combinations_with_replacement(fresh, n)]\n"),
		// Plain data where outputs are small; where they are digested,
		// objects that print as the expected strings and equal anything.
		sampleLine("Mbpp/255", "import itertools, math\nclass R:\n    def __init__(self, s):\n        self.s = s\n    def __repr__(self):\n        return repr(self.s)\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\ndef combinations_colors(l, n):\n    if not l or n <= 0 or math.comb(len(l) + n - 1, n) < 100000:\n        return list(itertools.combinations_with_replacement(l, n))\n    return list(itertools.combinations_with_replacement([R(x) for x in l], n))\n"),
		sampleLine("Mbpp/255", "import itertools\ndef combinations_colors(l, n):\n    return [list(c) for c in itertools.combinations_with_replacement(l, n)]\n"),
	)
	r := repro(t, env, "humaneval", "--dataset", "mbppplus", "--tasks", "255", "--samples", samples, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	res := readEvalResults(t, parseHumanEvalJSON(t, r).ResultsFile)
	got := res.Eval["Mbpp/255"]
	if len(got) != 3 {
		t.Fatalf("results %+v", got)
	}
	if got[0].BaseStatus != "pass" || got[0].PlusStatus != "pass" {
		b, _ := os.ReadFile(parseHumanEvalJSON(t, r).ResultsFile)
		t.Errorf("the equal output built anew: %+v\n%s", got[0], b)
	}
	for i, what := range []string{"", "always-equal objects that print as str", "lists for tuples"} {
		if i > 0 && got[i].PlusStatus != "fail" {
			t.Errorf("%s: plus %s, want fail", what, got[i].PlusStatus)
		}
	}
	// The cheat fails because the digest takes exact builtin types only,
	// not by running out of time.
	var reasons struct {
		Eval map[string][]struct {
			PlusReason string `json:"plus_reason"`
		} `json:"eval"`
	}
	b, _ := os.ReadFile(parseHumanEvalJSON(t, r).ResultsFile)
	if err := json.Unmarshal(b, &reasons); err != nil || len(reasons.Eval["Mbpp/255"]) != 3 {
		t.Fatalf("results: %v", err)
	}
	if why := reasons.Eval["Mbpp/255"][1].PlusReason; !strings.Contains(why, "marshal refuses") {
		t.Errorf("the cheat failed for another reason: %s", why)
	}
}
