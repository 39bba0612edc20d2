package codebench

import (
	"testing"

	"github.com/reprolab/repro/internal/codebench/wire"
)

func TestParallelFor(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		cores  int
		memory int64
		want   int
	}{
		{2, 24 * gib, 2},  // cores bind
		{64, 8 * gib, 16}, // memory binds at 512 MiB a container
		{8, 0, 8},         // memory unknown
		{4, 100 << 20, 1}, // less than one container's worth: still one
		{256, 1024 * gib, 64},
	} {
		if got := parallelFor(c.cores, c.memory, wire.SupervisorLimits().Memory); got != c.want {
			t.Errorf("parallelFor(%d cores, %d MiB) = %d, want %d", c.cores, c.memory>>20, got, c.want)
		}
	}
	if n := DefaultParallel(); n < 1 || n > 64 {
		t.Errorf("DefaultParallel() = %d", n)
	}
}
