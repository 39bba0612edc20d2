package humaneval

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/reprolab/repro/internal/digest"
)

// BenchmarkLoadDatasets reads and checks the HumanEval+ and MBPP+ files as
// a run does (each line through strictjson).
func BenchmarkLoadDatasets(b *testing.B) {
	dir := sharedData(b)
	for b.Loop() {
		for _, p := range []pinned{plusPin, mbppPin} {
			f, err := os.Open(filepath.Join(dir, p.file))
			if err != nil {
				b.Fatal(err)
			}
			var d *Dataset
			if p == mbppPin {
				d, err = LoadBenchmark(f, "mbppplus-v0.2.0", p.size, digest.MustParse(p.sum), MBPPPlus)
			} else {
				d, err = LoadPlus(f, "humanevalplus-v0.1.10", p.size, digest.MustParse(p.sum))
			}
			f.Close()
			if err != nil || len(d.Tasks) == 0 {
				b.Fatal(err)
			}
		}
	}
}
