package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/boardlog"
	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/runindex"
	"github.com/reprolab/repro/internal/runs"
)

// Accepted are the runs of the board that enter its history (see
// internal/boardlog), oldest first: every run whose folder verified
// against its signed record with a trusted key. This is the one place
// that says what the board accepts; which accepted runs rank is decided
// apart (see order).
func (br *BoardRuns) Accepted() []BoardRow {
	var out []BoardRow
	for _, rows := range br.byLabel {
		for _, r := range rows {
			if r.Verified && r.rep != nil && r.rep.Signer != nil {
				out = append(out, r)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return newer(out[j], out[i]) })
	return out
}

// LogEntries are the log entries of the runs the board accepts, made
// from the digests their verification read (no record is read again).
func (br *BoardRuns) LogEntries(home string) ([]boardlog.Entry, error) {
	var es []boardlog.Entry
	for _, r := range br.Accepted() {
		e, err := boardlog.EntryOf(home, r.RunID, br.dataset, r.Label, r.rep.Signer.KeyID, r.rep.recordSHA256, r.rep.envelopeSHA256)
		if err != nil {
			return nil, err
		}
		es = append(es, e)
	}
	return es, nil
}

// Published is what PublishBoardFolder wrote.
type Published struct {
	// Pages are the names of the pages written.
	Pages []string
	// Log is the append to the board's log; LogFiles the files of the
	// log written under log/ (none when the board accepts no run yet).
	Log      *boardlog.Appended
	LogFiles []string
}

// publishBoard writes the pages of br through write, as ExportBoard does,
// keeping the board's history: the runs the board accepts are appended to
// the dataset's log under home (see internal/boardlog; the log key is made
// on first use) before the pages are written, and the log's tiles and
// checkpoint are then copied into outDir/log, so that a published board
// carries its history. ids are the runs a board without runs names the
// datasets of.
func publishBoard(ctx context.Context, home string, br *BoardRuns, ids []string, outDir string, write func(name string, data []byte) error) (*Published, error) {
	if err := br.check(home, ids); err != nil {
		return nil, err
	}
	l, err := boardlog.Open(home, br.dataset)
	if err != nil {
		return nil, err
	}
	es, err := br.LogEntries(home)
	if err != nil {
		return nil, err
	}
	out := &Published{}
	if out.Log, err = l.Append(ctx, es); err != nil {
		return nil, err
	}
	if out.Pages, err = exportBoard(br, write); err != nil {
		return out, err
	}
	out.LogFiles, err = l.Publish(ctx, filepath.Join(outDir, "log"))
	return out, err
}

// PublishBoardFolder writes the leaderboard of dataset (matched without
// regard to case) as static pages into the folder out (made if missing),
// each file atomically, and appends its verified runs to the board's log,
// whose tiles and checkpoint it copies into out/log. It lists the runs
// through the run index of home (runindex.EntriesHome, as `repro serve`
// does; warn receives what the index reports) and reads each board run's
// record.json once, to verify it (CollectBoardOf). An empty out, or one
// inside the run folders, is refused before anything is read or written
// (exit 2); a dataset without HumanEval runs is a usage error too.
func PublishBoardFolder(ctx context.Context, home, dataset, out string, warn func(string)) (*Published, error) {
	if out == "" {
		return nil, exitcode.Errorf(exitcode.Usage, "--leaderboard needs --out DIR, the folder to write the pages into")
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "--out %q: %v", out, err)
	}
	if within(layout.Home(home).Runs(), filepath.Join(abs, "index.html")) {
		return nil, exitcode.Errorf(exitcode.Usage, "--out %q is inside the run folders; pages written there would change the runs they describe", out)
	}
	all, of, err := boardCandidates(ctx, home, dataset, warn)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot create --out %q: %v", out, err)
	}
	br, err := CollectBoardOf(ctx, home, dataset, of, codebench.LoadReference(home, dataset))
	if err != nil {
		return nil, err
	}
	return publishBoard(ctx, home, br, all, abs, func(name string, data []byte) error {
		if name != filepath.Base(name) || strings.HasPrefix(name, ".") {
			return fmt.Errorf("refusing to write %q: not a plain file name", name)
		}
		return atomicfile.WriteFile(filepath.Join(abs, name), data, 0o644)
	})
}

// boardCandidates lists the HumanEval runs of home as its run index holds
// them, oldest first (runs.List's order), without reading their records:
// all of them, and of those the ones whose entry names dataset (matched
// without regard to case). An interrupted listing is runs.Interrupted's
// error (exit 1).
func boardCandidates(ctx context.Context, home, dataset string, warn func(string)) (all, of []string, err error) {
	es, err := runindex.EntriesHome(ctx, home, runindex.Filter{Kind: "humaneval"}, warn)
	if ctx.Err() != nil {
		return nil, nil, runs.Interrupted(ctx, "the runs of the board of "+dataset)
	}
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(es, func(i, j int) bool { return runs.Before(es[i].ID, es[j].ID) })
	for _, e := range es {
		all = append(all, e.ID)
		if strings.EqualFold(e.Dataset, dataset) {
			of = append(of, e.ID)
		}
	}
	return all, of, nil
}
