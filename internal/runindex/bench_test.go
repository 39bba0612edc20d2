package runindex

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/runs"
)

// BenchmarkList10k lists and filters 10,000 synthetic runs. Each List
// includes its reconciliation with the folders (a read of runs/ and a stat
// of every record.json) and the re-check of every entry it returns.
// The target is under 200 ms per List.
//
//	go test -run '^$' -bench List10k -benchtime 20x ./internal/runindex
func BenchmarkList10k(b *testing.B) {
	home := b.TempDir()
	kinds := []string{"humaneval", "edm-fid", "handoff-minigo", "handoff-dlrm"}
	statuses := []string{"ok", "ok", "ok", "negative", "integrity"}
	for i := range 10000 {
		writeRun(b, home, i, fakeRun{
			kind:    kinds[i%len(kinds)],
			at:      base.Add(time.Duration(i) * time.Minute),
			status:  statuses[i%len(statuses)],
			assets:  []runs.Asset{{ID: fmt.Sprintf("dataset-%d", i%7), SHA256: hexOf(fmt.Sprint("d", i%7))}, {ID: "model", SHA256: hexOf(fmt.Sprint("m", i%100))}},
			samples: hexOf(fmt.Sprint("s", i)),
		})
	}
	ix, _ := openIndex(b, home)
	start := time.Now()
	if n, err := ix.Rebuild(context.Background()); err != nil || n != 10000 {
		b.Fatalf("Rebuild: %d, %v", n, err)
	}
	b.Logf("indexing 10,000 runs from their folders took %s", time.Since(start).Round(time.Millisecond))
	for _, bc := range []struct {
		name string
		f    Filter
		want int
	}{
		{"newest-50", Filter{Limit: 50}, 50},
		{"kind-status", Filter{Kind: "edm-fid", Status: "integrity", Limit: 50}, 50},
		{"dataset", Filter{Input: "dataset-3", Limit: 50}, 50},
		{"model-digest", Filter{Digest: hexOf("m42")[:12], Limit: 0}, 100},
		{"samples-digest", Filter{Digest: hexOf("s9999")}, 1},
		{"date-range", Filter{Since: base.Add(1000 * time.Minute), Until: base.Add(1100 * time.Minute)}, 100},
		{"all-10000", Filter{}, 10000},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				es, err := ix.List(context.Background(), bc.f)
				if err != nil || len(es) != bc.want {
					b.Fatalf("List: %d runs, %v; want %d", len(es), err, bc.want)
				}
			}
		})
	}
}
