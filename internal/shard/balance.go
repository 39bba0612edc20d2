package shard

import (
	"cmp"
	"math"
	"slices"
)

// TaskLoad is one task's place in the balance: its number of samples, the
// estimated seconds of one of them (Unit), and the seconds of the
// self-check that a part of the task costs where it does not hold the
// task's first sample (Check). The part that holds the first sample runs
// the task's whole self-check, the canonical solution on every input
// (Unit); every other part runs it on the base inputs only (Check, at
// most Unit, and Unit where the run has no plus inputs), because the
// first part's shard checks the rest.
type TaskLoad struct {
	Samples int
	Unit    float64
	Check   float64
}

// PartOf is a part of task Task (an index into the loads) in a shard: its
// samples From (inclusive) to To (exclusive), by their order in the task.
type PartOf struct {
	Task, From, To int
}

// partCost is the estimated cost of the samples from..from+k of a task:
// the samples, and the self-check their shard runs for the task.
func partCost(from, k int, l TaskLoad) float64 {
	u := unit(l)
	if from == 0 {
		return float64(k+1) * u
	}
	return float64(k)*u + check(l)
}

// cost is the estimated cost of part p of loads.
func cost(loads []TaskLoad, p PartOf) float64 { return partCost(p.From, p.To-p.From, loads[p.Task]) }

// shardCost is the estimated cost of a shard's parts.
func shardCost(loads []TaskLoad, s []PartOf) float64 {
	c := 0.0
	for _, p := range s {
		c += cost(loads, p)
	}
	return c
}

// splitSlack is how much dearer than the split balance the whole-task
// balance may be and still be chosen: a task is split only where that
// buys more than this.
const splitSlack = 1.05

// BalanceParts assigns the samples of tasks to n shards. It takes the
// whole-task balance (Balance, each task with all its samples in one
// shard) unless splitting tasks makes the largest shard more than
// splitSlack cheaper; then it splits: it looks for the smallest cap on a
// shard's cost under which packing succeeds, where the packing takes the
// tasks dearest first, puts a task whole on the least loaded shard if it
// fits under the cap, and otherwise fills the least loaded shards to the
// cap with parts of it. Every shard gets at least one part when there are
// at least n samples. The result is deterministic; within a shard the
// parts are in task order.
func BalanceParts(loads []TaskLoad, n int) [][]PartOf {
	whole := make([]float64, len(loads))
	for i, l := range loads {
		whole[i] = partCost(0, l.Samples, l)
	}
	var wholePlan [][]PartOf
	for _, idx := range Balance(whole, n) {
		var s []PartOf
		for _, i := range idx {
			s = append(s, PartOf{Task: i, From: 0, To: loads[i].Samples})
		}
		wholePlan = append(wholePlan, s)
	}
	wholeMax := MaxLoad(loads, wholePlan)
	total := 0.0
	for _, c := range whole {
		total += c
	}
	lo, hi := total/float64(n), wholeMax
	best, bestMax := [][]PartOf(nil), math.Inf(1)
	if p, ok := pack(loads, n, hi); ok {
		best, bestMax = p, MaxLoad(loads, p)
	}
	for range 60 {
		if hi-lo <= 1e-6*hi {
			break
		}
		mid := (lo + hi) / 2
		if p, ok := pack(loads, n, mid); ok {
			if m := MaxLoad(loads, p); m < bestMax {
				best, bestMax = p, m
			}
			hi = mid
		} else {
			lo = mid
		}
	}
	if best == nil || (wholeMax <= splitSlack*bestMax && !hasEmpty(wholePlan)) {
		return wholePlan
	}
	return best
}

func unit(l TaskLoad) float64 { return max(l.Unit, 1e-9) }

func check(l TaskLoad) float64 { return min(max(l.Check, 0), unit(l)) }

func hasEmpty(plan [][]PartOf) bool {
	return slices.ContainsFunc(plan, func(s []PartOf) bool { return len(s) == 0 })
}

// pack places the tasks under cap (see BalanceParts); ok is false if they
// do not fit or a shard stays empty.
func pack(loads []TaskLoad, n int, cap float64) ([][]PartOf, bool) {
	order := make([]int, len(loads))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(partCost(0, loads[b].Samples, loads[b]), partCost(0, loads[a].Samples, loads[a]))
	})
	load := make([]float64, n)
	out := make([][]PartOf, n)
	holds := make([]int, n) // the last task placed in each shard, +1
	least := func(task int) int {
		k := -1
		for j := range n {
			if holds[j] != task+1 && (k < 0 || load[j] < load[k]) {
				k = j
			}
		}
		return k
	}
	for _, i := range order {
		l := loads[i]
		u, c, left, from := unit(l), check(l), l.Samples, 0
		if k := least(i); load[k]+partCost(0, left, l) <= cap {
			load[k] += partCost(0, left, l)
			out[k], holds[k] = append(out[k], PartOf{i, 0, left}), i+1
			continue
		}
		for left > 0 {
			k := least(i)
			if k < 0 {
				return nil, false
			}
			// The first part pays the whole self-check, the others
			// the base one.
			room := cap - load[k] - c
			if from == 0 {
				room = cap - load[k] - u
			}
			fit := int(math.Floor(room / u * (1 + 1e-12)))
			if fit < 1 {
				return nil, false
			}
			take := min(fit, left)
			load[k] += partCost(from, take, l)
			out[k], holds[k] = append(out[k], PartOf{i, from, from + take}), i+1
			from, left = from+take, left-take
		}
	}
	fillEmpty(loads, out, load)
	for _, s := range out {
		slices.SortFunc(s, func(a, b PartOf) int { return cmp.Compare(a.Task, b.Task) })
	}
	return out, !hasEmpty(out)
}

// fillEmpty gives each empty shard work from the dearest shard that can
// spare some: the upper half of its largest part of two or more samples,
// else its last part. No shard gets dearer than the one it took from was.
func fillEmpty(loads []TaskLoad, out [][]PartOf, load []float64) {
	for e := range out {
		if len(out[e]) > 0 {
			continue
		}
		src, part := -1, -1
		for k, s := range out {
			if len(s) == 0 || src >= 0 && load[k] <= load[src] {
				continue
			}
			best := -1
			for j, p := range s {
				if p.To-p.From >= 2 && (best < 0 || p.To-p.From > s[best].To-s[best].From) {
					best = j
				}
			}
			if best < 0 && len(s) >= 2 {
				best = len(s) - 1
			}
			if best >= 0 {
				src, part = k, best
			}
		}
		if src < 0 {
			return
		}
		p := out[src][part]
		moved := p
		if p.To-p.From >= 2 {
			mid := p.From + (p.To-p.From)/2
			out[src][part].To, moved.From = mid, mid
		} else {
			out[src] = slices.Delete(out[src], part, part+1)
		}
		load[src] = shardCost(loads, out[src])
		out[e], load[e] = []PartOf{moved}, cost(loads, moved)
	}
}

// MaxLoad is the estimated cost of the dearest shard of plan.
func MaxLoad(loads []TaskLoad, plan [][]PartOf) float64 {
	m := 0.0
	for _, s := range plan {
		m = max(m, shardCost(loads, s))
	}
	return m
}

// LowerBound is a cost that the dearest shard of any plan of loads over n
// shards reaches at least: the smallest cap L at which the tasks, each cut
// into the fewest parts it needs under L (the part holding its first
// sample holds at most ⌊L/u⌋−1 samples, any other ⌊(L−c)/u⌋, for unit u
// and base check c), cost no more than n·L in all. It is at least the
// mean of the whole-task costs (the unsharded run's cost over n), and
// exceeds it only by the base checks of the parts a task must be cut into,
// or where one task's first sample and self-check exceed the mean.
func LowerBound(loads []TaskLoad, n int) float64 {
	total, floor := 0.0, 0.0
	for _, l := range loads {
		total += partCost(0, l.Samples, l)
		floor = max(floor, partCost(0, 1, l))
	}
	fits := func(L float64) bool {
		need := 0.0
		for _, l := range loads {
			u, c := unit(l), check(l)
			first := int(math.Floor(L/u*(1+1e-12))) - 1
			if first < 1 {
				return false
			}
			need += partCost(0, l.Samples, l)
			if l.Samples <= first {
				continue
			}
			other := int(math.Floor((L - c) / u * (1 + 1e-12)))
			if other < 1 {
				return false
			}
			need += float64((l.Samples-first+other-1)/other) * c
		}
		return need <= float64(n)*L*(1+1e-12)
	}
	lo, hi := max(total/float64(n), floor), max(total, floor)
	if fits(lo) {
		return lo
	}
	for range 100 {
		mid := (lo + hi) / 2
		if fits(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}
