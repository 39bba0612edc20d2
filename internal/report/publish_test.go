package report

import (
	"context"
	"database/sql"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/runindex"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/runs/runstest"
)

// TestPublishBoardFolderReadsEachRecordOnce: `repro report --leaderboard`
// lists runs through the run index, as `repro serve` does, and reads the
// record.json of each run on the board once (its verification, whose
// digests the board log's entries carry) and no other run's. Listed from
// the run folders, as it once was, each board run's record was read twice
// (to find its dataset, to verify it) and once more where the board
// accepted it (to log it), and every other HumanEval run's once: the
// count sees every read. The pages are those
// ExportBoard writes from the folders, byte for byte.
func TestPublishBoardFolderReadsEachRecordOnce(t *testing.T) {
	ctx := context.Background()
	home, board := boardFixture(t)
	other := runstest.HumanEvalRun(t, home, []runstest.Sample{{Task: "HumanEval/0", Pass: true}}, runstest.HumanEvalOptions{Dataset: "MbppPlus-v0.2.0", Label: "elsewhere"})
	all := append(append([]string{}, board...), other)
	// The index is built first, as by any earlier list of the runs; a
	// later publish reuses it.
	if n, err := runindex.Reindex(ctx, home, nil); err != nil || n != len(all) {
		t.Fatalf("Reindex: %d %v", n, err)
	}
	out := t.TempDir()
	var pub *Published
	var err error
	got := runstest.RecordReads(t, home, all, func() {
		pub, err = PublishBoardFolder(ctx, home, "humanevalplus-v0.1.10", out, func(w string) { t.Errorf("warning: %s", w) })
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := runstest.Each(board, 1); !maps.Equal(got, want) {
		t.Errorf("PublishBoardFolder read the records %v times, want %v", got, want)
	}

	want := map[string][]byte{}
	if _, err := ExportBoard(home, "humanevalplus-v0.1.10", all, func(name string, data []byte) error {
		want[name] = data
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(want)), slices.Sorted(slices.Values(pub.Pages))) {
		t.Fatalf("pages %q, ExportBoard's %q", pub.Pages, slices.Sorted(maps.Keys(want)))
	}
	for name, w := range want {
		if b, err := os.ReadFile(filepath.Join(out, name)); err != nil || string(b) != string(w) {
			t.Errorf("%s differs from ExportBoard's (%v)", name, err)
		}
	}

	// The log's entries name the bytes the verification read.
	br, err := CollectBoardOf(ctx, home, "HumanEvalPlus-v0.1.10", board, nil)
	if err != nil {
		t.Fatal(err)
	}
	es, err := br.LogEntries(home)
	if err != nil || len(es) == 0 || pub.Log.Checkpoint.Tree.N != int64(len(es)) {
		t.Fatalf("log entries %d (%v), log size %d", len(es), err, pub.Log.Checkpoint.Tree.N)
	}
	for _, e := range es {
		dir := layout.Home(home).Run(e.RunID)
		for file, sum := range map[string]string{runs.RecordFile: e.RecordSHA256, runs.EnvelopeFile: e.EnvelopeSHA256} {
			b, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil || digest.Of(b).Hex() != sum {
				t.Errorf("run %s: entry's digest of %s %s is not its file's (%v)", e.RunID, file, sum, err)
			}
		}
	}
}

// TestPublishBoardFolderListsFromTheIndex: the board's runs are those the
// run index names as runs of the dataset (runindex.EntriesHome, as `repro
// serve`'s board takes them), not what the folders would give: an entry
// whose dataset was altered in the index keeps its run off the board,
// as it does off the dashboard's.
func TestPublishBoardFolderListsFromTheIndex(t *testing.T) {
	ctx := context.Background()
	home, board := boardFixture(t)
	if _, err := runindex.Reindex(ctx, home, nil); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", layout.Home(home).RunIndex())
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`UPDATE subjects SET dataset = 'forged' WHERE run_id = ?`, board[1])
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := PublishBoardFolder(ctx, home, "humanevalplus-v0.1.10", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range board {
		if on := slices.Contains(pub.Pages, id+".html"); on != (i != 1) {
			t.Errorf("run %d (%s) on the board: %v, want %v; pages %q", i, id, on, i != 1, pub.Pages)
		}
	}
}
