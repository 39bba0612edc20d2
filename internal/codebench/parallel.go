package codebench

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/reprolab/repro/internal/codebench/wire"
)

// DefaultParallel is the number of sandbox containers this machine can
// hold at once: one per core, but no more than the available memory
// allows at the per-container memory limit (wire.SupervisorLimits), and at
// least one.
func DefaultParallel() int {
	return parallelFor(runtime.NumCPU(), memAvailable(), wire.SupervisorLimits().Memory)
}

// parallelFor is DefaultParallel's rule: min(cores, memory/limit), within
// 1 and 64; memory 0 means unknown.
func parallelFor(cores int, memory, limit int64) int {
	n := cores
	if memory > 0 && limit > 0 {
		n = min(n, int(memory/limit))
	}
	return max(1, min(n, 64))
}

// memAvailable reads MemAvailable from /proc/meminfo, in bytes; 0 when it
// cannot be read.
func memAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != "MemAvailable" {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 2 && f[1] == "kB" {
			if n, err := strconv.ParseInt(f[0], 10, 64); err == nil && n > 0 {
				return n << 10
			}
		}
	}
	return 0
}
