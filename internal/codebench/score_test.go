package codebench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

// TestEvalPlusTreeRelative: a relative --evalplus-tree is resolved against
// the current folder before anything runs (the sandbox mounts absolute
// paths only); one that names no folder stops with a one-line usage error
// naming the flag.
func TestEvalPlusTreeRelative(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "tree"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	opts := func(tree string) *Options {
		return &Options{Canonical: true, Dataset: "humanevalplus-mini", Parallel: 1, Engine: EngineEvalPlus,
			EvalPlusTree: tree, Limits: DefaultRunLimits()}
	}
	o := opts("tree")
	if err := o.Validate(); err != nil {
		t.Fatalf("a relative tree: %v", err)
	}
	if want := filepath.Join(dir, "tree"); o.EvalPlusTree != want {
		t.Fatalf("the tree is %q, want %q", o.EvalPlusTree, want)
	}
	for _, bad := range []string{"no-such-tree", "tree/../missing"} {
		err := opts(bad).Validate()
		if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "--evalplus-tree "+bad) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v (exit %d), want a one-line usage error naming the flag", bad, err, exitcode.Of(err))
		}
	}
}

func TestSelectMBPPTasks(t *testing.T) {
	d := testDataset(t, "mbppplus-v0.2.0")
	got, err := SelectTasks(d, "Mbpp/2,3-6,809")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, task := range got {
		ids = append(ids, task.ID)
	}
	if len(ids) != 5 || ids[0] != "Mbpp/2" || ids[1] != "Mbpp/3" || ids[2] != "Mbpp/4" || ids[3] != "Mbpp/6" || ids[4] != "Mbpp/809" {
		t.Fatalf("selected %v", ids)
	}
	for _, bad := range []string{"5", "0", "810", "HumanEval/2", "1-5", "5-3"} {
		if _, err := SelectTasks(d, bad); err == nil {
			t.Errorf("--tasks %q accepted", bad)
		}
	}
}
