package handoff

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/reprolab/repro/internal/exitcode"
)

// The seeds of the runs.

// assignSeeds returns one run per seed: the configured seeds, which must
// be distinct and one per run, or distinct seeds drawn from r.
func assignSeeds(w *Workload, c *Config, r io.Reader) ([]RunSpec, error) {
	n := c.Runs
	if n == 0 {
		n = w.DefaultRuns
	}
	if len(c.Seeds) > 0 && len(c.Seeds) != n {
		return nil, exitcode.Errorf(exitcode.Usage, "config: %d seeds for %d runs; give one distinct seed per run or none", len(c.Seeds), n)
	}
	seen := map[int64]bool{}
	var out []RunSpec
	for i := 0; i < n; i++ {
		var s int64
		if len(c.Seeds) > 0 {
			s = c.Seeds[i]
			if seen[s] {
				return nil, exitcode.Errorf(exitcode.Usage, "config: seed %d appears twice; MLPerf's seed checker rejects repeated seeds", s)
			}
		} else {
			for {
				var b [4]byte
				if _, err := io.ReadFull(r, b[:]); err != nil {
					return nil, fmt.Errorf("drawing seeds: %v", err)
				}
				s = int64(binary.BigEndian.Uint32(b[:]) & math.MaxInt32)
				if s != 0 && !seen[s] {
					break
				}
			}
		}
		seen[s] = true
		out = append(out, RunSpec{Index: i, Seed: s})
	}
	return out, nil
}
