package task_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/task/tasktest"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/testenv"
)

// BenchmarkLoadDatasets reads and checks the HumanEval+ and MBPP+ files as
// a run does (each line through strictjson).
func BenchmarkLoadDatasets(b *testing.B) {
	dir := testenv.SharedData(b)
	for b.Loop() {
		for _, p := range []tasktest.Pin{tasktest.PlusPin, tasktest.MBPPPin} {
			f, err := os.Open(filepath.Join(dir, p.File))
			if err != nil {
				b.Fatal(err)
			}
			var d *task.Dataset
			if p == tasktest.MBPPPin {
				d, err = task.LoadBenchmark(f, "mbppplus-v0.2.0", p.Size, digest.MustParse(p.Sum), task.MBPPPlus)
			} else {
				d, err = task.LoadPlus(f, "humanevalplus-v0.1.10", p.Size, digest.MustParse(p.Sum))
			}
			f.Close()
			if err != nil || len(d.Tasks) == 0 {
				b.Fatal(err)
			}
		}
	}
}
