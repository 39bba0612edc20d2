package codebench

// largeTruthChildMemory is the address-space limit of a canonical
// solution computing ground truth in the large sandbox.
const largeTruthChildMemory = 3584 << 20

// largeChildMemory is the address-space limit of a program scored in the
// large sandbox: twice the canonical solution's peak resident memory plus
// 256 MiB (for the interpreter's own mappings), at least the ordinary
// limit and at most largeTruthChildMemory.
func largeChildMemory(peakKB, ordinary int64) int64 {
	return min(largeTruthChildMemory, max(ordinary, 2*peakKB<<10+256<<20))
}
