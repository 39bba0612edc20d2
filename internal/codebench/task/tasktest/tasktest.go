// Package tasktest loads the real datasets of package task for tests: the
// pinned files under the shared data folder (testenv.SharedData), each
// parsed once per test process.
package tasktest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/testenv"
)

// Pin is a dataset file under testenv.SharedData with its catalog pin.
type Pin struct {
	File string // relative to testenv.SharedData
	Size int64
	Sum  string // SHA-256, hex
}

// The pinned dataset files.
var (
	PlusPin = Pin{"humanevalplus-v0.1.10/HumanEvalPlus.jsonl.gz", 925932, "272720b90ac375502c8ed23cd791c2a93dfb22a911641a494da74a426c09f101"}
	MiniPin = Pin{"humanevalplus-v0.1.10/HumanEvalPlus-Mini.jsonl.gz", 57064, "91486741f1627101021fbe50523df08eebb5b0bf5e804b633dcd5ca3c14dbd2f"}
	MBPPPin = Pin{"mbppplus-v0.2.0/MbppPlus.jsonl.gz", 336032, "af43697e8791c4c149bdfd6b489d8b5412507551ac20e28a439f650b8225db63"}
	OrigPin = Pin{"human-eval/HumanEval.jsonl.gz", 44877, "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef"}
)

var datasets struct {
	sync.Mutex
	m map[string]*task.Dataset
}

// Dataset loads one of the real datasets, by catalog id, once per test
// process: humanevalplus-v0.1.10, humanevalplus-mini-v0.1.10,
// mbppplus-v0.2.0 or humaneval.
func Dataset(t testing.TB, id string) *task.Dataset {
	t.Helper()
	datasets.Lock()
	defer datasets.Unlock()
	if d := datasets.m[id]; d != nil {
		return d
	}
	open := func(p Pin) *os.File {
		f, err := os.Open(filepath.Join(testenv.SharedData(t), p.File))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	var d *task.Dataset
	var err error
	switch id {
	case "humanevalplus-v0.1.10", "humanevalplus-mini-v0.1.10":
		p := PlusPin
		if id != "humanevalplus-v0.1.10" {
			p = MiniPin
		}
		f := open(p)
		defer f.Close()
		d, err = task.LoadPlus(f, id, p.Size, digest.MustParse(p.Sum))
	case "mbppplus-v0.2.0":
		f := open(MBPPPin)
		defer f.Close()
		d, err = task.LoadBenchmark(f, id, MBPPPin.Size, digest.MustParse(MBPPPin.Sum), task.MBPPPlus)
	case "humaneval":
		datasets.Unlock()
		plus := Dataset(t, "humanevalplus-v0.1.10")
		datasets.Lock()
		f := open(OrigPin)
		defer f.Close()
		d, err = task.LoadOriginal(f, id, OrigPin.Size, digest.MustParse(OrigPin.Sum), plus)
	default:
		t.Fatalf("no test dataset %s", id)
	}
	if err != nil {
		t.Fatal(err)
	}
	if datasets.m == nil {
		datasets.m = map[string]*task.Dataset{}
	}
	datasets.m[id] = d
	return d
}
