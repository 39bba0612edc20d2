package codebench

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/strictjson"
)

// The verdict cache (Options.Cache) reuses a verdict of an earlier run
// only when everything that decided it is the same and the run is this
// REPRO_HOME's own:
//
//   - the key is the task, the program's digest and the phase, and the
//     earlier run's identity (RunIdentity, from its journal's header) must
//     equal this run's in every field but those that name which samples and
//     tasks a run scored (cacheNeutral): the dataset and its digest, the
//     engine, image, runtime, harness, limits, CPU model, repro's version and
//     the digest of the repro binary itself (ReproBuild), so a change to the
//     judge, the supervisor or any other part of repro invalidates it;
//   - the earlier run completed (exit 0) and verifies against a trust file
//     holding only this REPRO_HOME's run key (runs.OwnTrust), and was not
//     imported (runs.Imported): a key the maintainer trusts for others' runs
//     never feeds the cache, nor does any bundle;
//   - no run id, date or order decides a verdict: where two of the runs
//     read disagree on a verdict (status or failing input), neither is
//     reused and the program is scored again.

// cacheNeutral are the RunIdentity fields (by JSON name) that say which
// samples and tasks a run scored, not how a verdict was decided. Every
// other field, present and future, is part of the cache's key.
var cacheNeutral = map[string]bool{"tasks": true, "samples": true, "samples_sha256": true, "canonical": true, "base_only": true}

// cacheKey names a verdict that --cache may reuse: its task, program,
// phase and the digest of the task's ground truth it was judged against
// (journalVerdict.Truth); the rest of what it depends on is the run's
// identity, matched run by run.
type cacheKey struct {
	task, program, phase, truth string
}

type cached struct {
	res  PhaseResult
	from string
}

// maxCacheRuns bounds the earlier runs whose verdicts --cache reads (the
// latest of this home's own runs that match); each is verified in full
// first.
const maxCacheRuns = 8

var reproBuild struct {
	once sync.Once
	sum  string
	err  error
}

// ReproBuild is the SHA-256 of the running repro binary (read through
// /proc/self/exe, the file the kernel runs, whatever its path now holds),
// as "sha256:<hex>". It names the build exactly: the judge, the harness
// embedded in it, the toolchain and every module.
func ReproBuild() (string, error) {
	reproBuild.once.Do(func() {
		f, err := os.Open("/proc/self/exe")
		if err != nil {
			reproBuild.err = err
			return
		}
		defer f.Close()
		h := digest.NewWriter(io.Discard)
		if _, err := io.Copy(h, f); err != nil {
			reproBuild.err = err
			return
		}
		sum, _ := h.Sum()
		reproBuild.sum = sum.String()
	})
	if reproBuild.err != nil {
		return "", exitcode.Errorf(exitcode.Precondition, "cannot read the repro binary to name its build (/proc/self/exe): %v", reproBuild.err)
	}
	return reproBuild.sum, nil
}

// cacheDiffers names the fields of identity in which an earlier run's
// identity a differs from b, but for cacheNeutral ones.
func cacheDiffers(a, b RunIdentity) []string {
	var out []string
	for _, f := range a.differs(b) {
		if !cacheNeutral[f] {
			out = append(out, f)
		}
	}
	return out
}

// verdictCache gathers the verdicts --cache may reuse for a run of
// identity id (self, its own id, is skipped): those of the latest
// maxCacheRuns runs under home that are this home's own (runs.VerifyOwn),
// completed, and have id's identity but for cacheNeutral fields, without
// any on which two of them disagree. It returns the runs it read, sorted.
func verdictCache(home string, id RunIdentity, self string) (map[cacheKey]cached, []string, error) {
	if id.Build == "" {
		return nil, nil, exitcode.Errorf(exitcode.Precondition, "--cache needs the digest of the repro binary (ReproBuild)")
	}
	own, err := runs.OwnTrust(home)
	if err != nil {
		return nil, nil, err
	}
	ids, err := runs.List(home)
	if err != nil {
		return nil, nil, err
	}
	var used []string
	var read []*priorRun
	for k := len(ids) - 1; k >= 0 && len(used) < maxCacheRuns; k-- {
		rid := ids[k]
		if rid == self || !strings.HasPrefix(rid, "humaneval-") || runs.Imported(home, rid) {
			continue
		}
		r, err := runs.Open(home, rid)
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(r.Dir, JournalFile)); err != nil {
			continue
		}
		if rec, _, err := r.ReadRecord(); err != nil || rec.ExitCode != 0 {
			continue
		}
		p, err := readJournal(home, rid)
		if err != nil || len(cacheDiffers(p.header.Identity, id)) > 0 {
			continue
		}
		v, err := r.VerifyOwn(own)
		if err != nil {
			continue
		}
		// The journal read before the check is the one the record signs
		// only if its chain ends where the verified record says.
		if head, n, ok := signedJournal(v.Record); !ok || head != p.chain.Head || n != p.chain.Entries {
			continue
		}
		used = append(used, rid)
		read = append(read, p)
	}
	sort.Strings(used)
	// Runs are merged in id order only to pick which of several equal
	// verdicts names its run; a disagreement drops the key.
	sort.Slice(read, func(i, j int) bool { return read[i].id < read[j].id })
	out := map[cacheKey]cached{}
	conflict := map[cacheKey]bool{}
	for _, p := range read {
		for _, v := range p.verdicts {
			ck := cacheKey{v.Task, v.Program, v.Phase, v.Truth}
			if conflict[ck] {
				continue
			}
			c, ok := out[ck]
			switch {
			case !ok:
				out[ck] = cached{res: v.Result, from: p.id}
			case c.res.Status != v.Result.Status || c.res.FailInput != v.Result.FailInput:
				delete(out, ck)
				conflict[ck] = true
			}
		}
	}
	return out, used, nil
}

// signedJournal is the head and length of the journal that a verified
// humaneval record states (extra.journal); ok is false where it states
// none.
func signedJournal(rec *runs.Record) (head string, entries int, ok bool) {
	b, err := json.Marshal(rec.Extra)
	if err != nil {
		return "", 0, false
	}
	var x struct {
		Journal *JournalReport `json:"journal"`
	}
	if err := strictjson.DecodeOpen(b, &x); err != nil || x.Journal == nil || x.Journal.Head == "" {
		return "", 0, false
	}
	return x.Journal.Head, x.Journal.Entries, true
}

// stampBuild sets id's Build, the digest of this repro binary.
func stampBuild(id *RunIdentity) error {
	b, err := ReproBuild()
	id.Build = b
	return err
}
