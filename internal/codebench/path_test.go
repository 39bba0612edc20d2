package codebench

import (
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// modulePrefix starts the import path of every package of repro.
const modulePrefix = "github.com/reprolab/repro/"

// call is one call on a traced stack: its function and file, and the
// package of repro it belongs to (the path below modulePrefix).
type call struct{ fn, file, pkg string }

// reproStack returns its caller's stack, innermost call first, keeping
// repro's own functions only.
func reproStack() []call {
	pcs := make([]uintptr, 256)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	var out []call
	for {
		f, more := frames.Next()
		if rest, ok := strings.CutPrefix(f.Function, modulePrefix); ok {
			// "internal/codebench.(*Scorer).runPhase.func2": the package
			// ends at the first dot after the last slash.
			slash := strings.LastIndex(rest, "/")
			dot := strings.Index(rest[slash+1:], ".")
			out = append(out, call{fn: rest, file: f.File, pkg: rest[:slash+1+dot]})
		}
		if !more {
			return out
		}
	}
}

// packageRuns lists the packages a stack (innermost call first) passes
// through from its outermost call inwards, one entry for each run of calls
// in one package: a package listed twice was entered again.
func packageRuns(stack []call) []string {
	var runs []string
	for i := len(stack) - 1; i >= 0; i-- {
		if len(runs) == 0 || runs[len(runs)-1] != stack[i].pkg {
			runs = append(runs, stack[i].pkg)
		}
	}
	return runs
}

// TestSamplesPathEntersEachPackageOnce traces a scoring run from Score to
// its verdicts: the stack at each read of the user's samples (before the
// run and at its end), at each job handed to the supervisor's wire and at
// each output judged. On each such stack every package of repro is entered
// once, but for the one callback of the design: the wire hands each record
// to the run as it arrives (so that a failing output stops its job at
// once), and the run judges it there. The log gives the figures: each
// point's path through the packages, and how many functions and files of
// repro the path runs through (go test ./internal/codebench -run
// TestSamplesPathEntersEachPackageOnce -v).
func TestSamplesPathEntersEachPackageOnce(t *testing.T) {
	st, samples := scoreStore(t)
	var mu sync.Mutex
	stacks := map[string][][]call{}
	trace := func(point string) {
		s := reproStack()
		mu.Lock()
		stacks[point] = append(stacks[point], s)
		mu.Unlock()
	}
	opened := func(path string) {
		if path == samples {
			trace("read")
		}
	}
	if !sampleOpened.CompareAndSwap(nil, &opened) {
		t.Fatal("another test counts the samples' opens")
	}
	t.Cleanup(func() { sampleOpened.Store(nil) })
	if !pathTraced.CompareAndSwap(nil, &trace) {
		t.Fatal("another test traces the samples' path")
	}
	t.Cleanup(func() { pathTraced.Store(nil) })

	rep, err := scoreTask53(st, samples)
	if err != nil {
		t.Fatalf("score: %v", err)
	}
	if rep.Summary == nil || rep.Summary.Samples != 2 || rep.Summary.PlusPassed != 2 {
		t.Fatalf("summary %+v, want 2 samples that pass", rep.Summary)
	}

	const run, wire = "internal/codebench", "internal/codebench/wire"
	funcs, files := map[string]bool{}, map[string]bool{}
	for _, point := range []string{"read", "job", "judge"} {
		if len(stacks[point]) == 0 {
			t.Fatalf("no stack at %s: the trace missed a point of the path", point)
		}
		paths := map[string]bool{}
		for _, s := range stacks[point] {
			for _, c := range s {
				funcs[c.fn], files[c.file] = true, true
			}
			runs := packageRuns(s)
			paths[strings.Join(runs, " > ")] = true
			for i, p := range runs {
				if slices.Index(runs, p) == i {
					continue
				}
				if p == run && point == "judge" && runs[i-1] == wire && i == len(runs)-1 && slices.Index(runs, wire) == i-1 {
					continue // the record callback, the path's last step
				}
				t.Errorf("at %s the path enters %s again: %s", point, p, strings.Join(runs, " > "))
			}
		}
		var sorted []string
		for p := range paths {
			sorted = append(sorted, p)
		}
		sort.Strings(sorted)
		for _, p := range sorted {
			t.Logf("%s (%d stacks): %s", point, len(stacks[point]), p)
		}
	}
	t.Logf("the path runs through %d functions of repro in %d files", len(funcs), len(files))
}
