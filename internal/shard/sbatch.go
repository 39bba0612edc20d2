package shard

import (
	"fmt"
	"strings"
)

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sbatchScript is the job array script of the bundle: one array task per
// shard, each running the bundle's repro binary on its shard. Slurm may
// requeue a task (node failure, preemption); the task then starts over.
func sbatchScript(p *Plan, bundle string, o PlanOptions) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	b.WriteString("#SBATCH --job-name=repro-shard\n")
	fmt.Fprintf(&b, "#SBATCH --array=0-%d\n", len(p.Shards)-1)
	b.WriteString("#SBATCH --requeue\n")
	b.WriteString("#SBATCH --output=shards/slurm-%A_%a.out\n")
	if o.Partition != "" {
		fmt.Fprintf(&b, "#SBATCH --partition=%s\n", o.Partition)
	}
	if o.CPUs > 0 {
		fmt.Fprintf(&b, "#SBATCH --cpus-per-task=%d\n", o.CPUs)
	}
	if o.Time != "" {
		fmt.Fprintf(&b, "#SBATCH --time=%s\n", o.Time)
	}
	b.WriteString("# Written by repro shard plan. Submit from the bundle folder with\n")
	b.WriteString("# 'repro shard submit BUNDLE' (or sbatch " + SbatchFile + "); each array task\n")
	b.WriteString("# scores its shard and writes " + ShardsDir + "/shard-K.dsse.json; then\n")
	b.WriteString("# 'repro shard merge BUNDLE'.\n")
	b.WriteString("set -eu\n")
	fmt.Fprintf(&b, "bundle=%s\n", shellQuote(bundle))
	b.WriteString("exec \"$bundle/" + BinaryFile + "\" shard run \"$bundle\" --index \"$SLURM_ARRAY_TASK_ID\"\n")
	return b.String()
}
