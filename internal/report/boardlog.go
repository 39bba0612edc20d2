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
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/humaneval"
	"github.com/reprolab/repro/internal/layout"
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

// Published is what PublishBoard wrote.
type Published struct {
	// Pages are the names of the pages written.
	Pages []string
	// Log is the append to the board's log; LogFiles the files of the
	// log written under log/ (none when the board accepts no run yet).
	Log      *boardlog.Appended
	LogFiles []string
}

// PublishBoard is ExportBoard that keeps the board's history: the runs
// the board accepts are appended to the dataset's log under home (see
// internal/boardlog; the log key is made on first use) before the pages
// are written through write, and the log's tiles and checkpoint are then
// copied into outDir/log, so that a published board carries its history.
func PublishBoard(ctx context.Context, home, dataset string, ids []string, outDir string, write func(name string, data []byte) error) (*Published, error) {
	br, err := CollectBoardContext(ctx, home, dataset, ids, humaneval.LoadReference(home, dataset))
	if err != nil {
		return nil, err
	}
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

// PublishBoardFolder writes the leaderboard of dataset, over every run of home,
// as static pages into the folder out (made if missing), each file
// atomically, and appends its verified runs to the board's log
// (PublishBoard). An empty out, or one inside the run folders, is refused
// before anything is written (exit 2).
func PublishBoardFolder(ctx context.Context, home, dataset, out string) (*Published, error) {
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
	ids, err := runs.List(home)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot create --out %q: %v", out, err)
	}
	return PublishBoard(ctx, home, dataset, ids, abs, func(name string, data []byte) error {
		if name != filepath.Base(name) || strings.HasPrefix(name, ".") {
			return fmt.Errorf("refusing to write %q: not a plain file name", name)
		}
		return atomicfile.WriteFile(filepath.Join(abs, name), data, 0o644)
	})
}
