package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/reproduce"
	"github.com/reprolab/repro/internal/reproduce/reproducetest"
	"github.com/reprolab/repro/internal/runimport"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/trust"
)

// TestBoardRequiresReexecution: three runs of a lab arrive as bundles and
// are imported; the maintainer re-executes one to agreement and one to a
// difference (its verdicts were forged and the record re-signed with the
// lab's trusted key), and leaves the third alone; a fourth run of the lab
// is copied into runs/ by hand with its key in trust.json, and a fifth is
// the maintainer's own. Without the policy the board only shows the
// re-executions; with "leaderboard": {"require_reexecution": true} only
// the run whose re-execution agrees and the maintainer's own are ranked,
// and each other says why.
func TestBoardRequiresReexecution(t *testing.T) {
	lab := t.TempDir()
	honest := boardRun(t, lab, 1, boardRunSpec{label: "honest", model: "org/honest", n: 1, base: 6, plus: 5, speed: 1})
	forged := boardRun(t, lab, 2, boardRunSpec{label: "forged", model: "org/forged", n: 1, base: 10, plus: 10, speed: 1})
	unchecked := boardRun(t, lab, 3, boardRunSpec{label: "unchecked", model: "org/unchecked", n: 1, base: 4, plus: 3, speed: 1})
	copied := boardRun(t, lab, 4, boardRunSpec{label: "copied", model: "org/copied", n: 1, base: 4, plus: 3, speed: 1})

	pem, err := os.ReadFile(runs.LocalPublicKeyPath(lab))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := keys.ParsePublic(pem)
	if err != nil {
		t.Fatal(err)
	}
	submitters := filepath.Join(t.TempDir(), "submitters.json")
	if err := runs.WriteTrust(submitters, &trust.File{Version: trust.Version, Keys: []trust.Key{trust.NewKey("lab", pub, []trust.Purpose{trust.RunRecords}, nil, nil)}}); err != nil {
		t.Fatal(err)
	}
	subs, err := runs.LoadTrust("", submitters)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	if _, err := runs.LocalKey(home); err != nil { // the maintainer's key and trust file
		t.Fatal(err)
	}
	sub := map[string]reproduce.Submission{}
	for _, id := range []string{honest, forged, unchecked} {
		bundle := filepath.Join(t.TempDir(), id+".tar")
		if _, err := runs.Export(lab, id, bundle); err != nil {
			t.Fatal(err)
		}
		res, err := runimport.Import(home, bundle, subs, submitters)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := os.ReadFile(runs.RecordPath(home, res.RunID))
		if err != nil {
			t.Fatal(err)
		}
		sub[id] = reproduce.Submission{RunID: id, Signer: "lab", SignerKeyID: keys.ID(pub), RecordSHA256: digest.Of(rec).Hex(), Dataset: "HumanEvalPlus-v0.1.10"}
	}
	// The maintainer's own run, signed with the local key: it ran here.
	boardRun(t, home, 5, boardRunSpec{label: "in-house", model: "org/in-house", n: 1, base: 3, plus: 2, speed: 1})
	// A lab's run copied into runs/ by hand, its key put in trust.json:
	// verified, not imported, and still a submission.
	if err := os.CopyFS(filepath.Join(home, "runs", copied), os.DirFS(filepath.Join(lab, "runs", copied))); err != nil {
		t.Fatal(err)
	}
	mine, err := runs.LoadTrust(home, "")
	if err != nil {
		t.Fatal(err)
	}
	mine.Keys = append(mine.Keys, trust.NewKey("lab", pub, []trust.Purpose{trust.RunRecords}, nil, nil))
	if err := runs.WriteTrust(layout.Home(home).Trust(), mine); err != nil {
		t.Fatal(err)
	}
	reproducetest.Record(t, home, sub[honest], reproducetest.Agreeing(fixtureTasks*2))
	differs := reproducetest.Agreeing(fixtureTasks*2 - 1)
	differs.Verdicts++
	differs.Differences = []reproduce.Verdict{{Task: "HumanEval/3", Phase: "base", TimeLimit: true,
		Submitted:  reproduce.Measurement{Status: "pass", Elapsed: 0.5, Limit: 4},
		Reexecuted: reproduce.Measurement{Status: "timeout", Elapsed: 4.2, Limit: 4}}}
	reproducetest.Record(t, home, sub[forged], differs)

	ids, err := runs.List(home)
	if err != nil {
		t.Fatal(err)
	}
	board := func() (*Board, map[string]BoardRow) {
		t.Helper()
		b, err := buildBoard(home, "HumanEvalPlus-v0.1.10", ids, BoardOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rows := map[string]BoardRow{}
		for _, r := range b.Rows {
			rows[r.Label] = r
		}
		if len(rows) != 5 {
			t.Fatalf("board rows: %v", labels(b))
		}
		return b, rows
	}
	b, rows := board()
	if b.RequireReexecution || rows["forged"].Rank != 1 || rows["honest"].Rank == 0 || rows["unchecked"].Rank == 0 || rows["copied"].Rank == 0 {
		t.Fatalf("without the policy every verified full run ranks: %v", labels(b))
	}
	if re := rows["honest"].Reexecution; re == nil || re.Text() != "re-executed: 24 of 24 verdicts agree" || rows["honest"].Local {
		t.Errorf("honest row's re-execution: %+v", re)
	}
	want := "re-executed: 23 of 24 verdicts agree; differs: HumanEval/3 #0 base: submitted pass (0.50 s of a 4.00 s limit), re-executed timeout (4.20 s of a 4.00 s limit)"
	if re := rows["forged"].Reexecution; re == nil || re.Agrees || re.Text() != want {
		t.Errorf("forged row's re-execution: %+v", re)
	}
	if rows["unchecked"].Reexecution != nil {
		t.Errorf("a run never re-executed shows one")
	}

	p := layout.Home(home).Trust()
	tf, err := runs.LoadTrust(home, "")
	if err != nil {
		t.Fatal(err)
	}
	tf.Leaderboard.RequireReexecution = true
	if err := runs.WriteTrust(p, tf); err != nil {
		t.Fatal(err)
	}
	b, rows = board()
	if !b.RequireReexecution || rows["honest"].Rank != 1 || rows["in-house"].Rank != 2 || rows["forged"].Rank != 0 || rows["unchecked"].Rank != 0 || rows["copied"].Rank != 0 {
		t.Fatalf("under the policy only the agreeing re-execution ranks: %v", labels(b))
	}
	if got := rows["forged"].NotRanked; got != "its re-execution here differs (23 of 24 verdicts agree)" {
		t.Errorf("forged: not ranked %q", got)
	}
	for _, l := range []string{"unchecked", "copied"} {
		if got := rows[l].NotRanked; got != "not re-executed here (repro runs reproduce)" {
			t.Errorf("%s: not ranked %q", l, got)
		}
	}
	if !rows["in-house"].Local || rows["copied"].Local || rows["honest"].Local {
		t.Errorf("local rows: in-house %v, copied %v, honest %v", rows["in-house"].Local, rows["copied"].Local, rows["honest"].Local)
	}
	var page bytes.Buffer
	if err := WriteBoard(&page, b, staticLinks{defaultKey: b.Sort}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"ranked only when its re-execution on this machine", "re-executed: 24 of 24 verdicts agree",
		`<small class="differs"`, "not ranked: its re-execution here differs (23 of 24 verdicts agree)", "re-executed timeout (4.20 s of a 4.00 s limit)"} {
		if !strings.Contains(page.String(), s) {
			t.Errorf("the board page lacks %q", s)
		}
	}
}
