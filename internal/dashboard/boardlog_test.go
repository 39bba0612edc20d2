package dashboard

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/boardlog"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/report"
)

// TestServedBoardLog: repro serve's board log, read over a loopback HTTP
// server, verifies with the log key and holds every verified run of the
// board, not the one whose record was edited; once the store's log is
// rewritten, the served log fails the check against a kept checkpoint.
// No other file of the store is served under the log's path.
func TestServedBoardLog(t *testing.T) {
	home, ids := boardHome(t)
	const dataset = "HumanEvalPlus-v0.1.10"
	br := report.CollectBoard(home, dataset, ids)
	es, err := br.LogEntries(home)
	if err != nil {
		t.Fatal(err)
	}
	l, err := boardlog.Open(home, dataset)
	if err != nil {
		t.Fatal(err)
	}
	a, err := l.Append(context.Background(), es)
	if err != nil || a.Checkpoint.Tree.N != int64(len(es)) || len(es) != 4 {
		t.Fatalf("Append of %d entries: %+v %v", len(es), a, err)
	}
	v, err := boardlog.NewVerifier(a.VerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	base := serve(t, &Server{Home: home}, "127.0.0.1:0", false)
	ctx := context.Background()
	src, err := boardlog.OpenSource(ctx, base+"/board/log/"+strings.ToLower(dataset))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := boardlog.Verify(ctx, src, v, boardlog.VerifyOptions{RunID: es[0].RunID, Since: a.Signed})
	if err != nil || rep.Size != 4 || len(rep.Run) != 1 {
		t.Fatalf("Verify of the served log: %+v %v", rep, err)
	}
	var edited string
	for _, r := range br.Accepted() {
		if r.Label == "edited-results" {
			t.Errorf("the run whose record was edited was accepted: %s", r.RunID)
		}
	}
	b, _ := br.Board(report.BoardOptions{All: true})
	for _, r := range b.Rows {
		if !r.Verified {
			edited = r.RunID
		}
	}
	if _, err := boardlog.Verify(ctx, src, v, boardlog.VerifyOptions{RunID: edited}); exitcode.Of(err) != exitcode.Integrity {
		t.Errorf("--run of the unverified run %q: %v, want an integrity error", edited, err)
	}

	// Behind a token (remote mode), the address with ?token= reads it.
	tokened := serve(t, &Server{Home: home, Token: "s3cret"}, "127.0.0.1:0", false)
	logURL := tokened + "/board/log/" + strings.ToLower(dataset)
	if src, err := boardlog.OpenSource(ctx, logURL+"?token=s3cret"); err != nil {
		t.Fatal(err)
	} else if _, err := boardlog.Verify(ctx, src, v, boardlog.VerifyOptions{}); err != nil {
		t.Errorf("Verify with the token: %v", err)
	}
	if src, err := boardlog.OpenSource(ctx, logURL); err != nil {
		t.Fatal(err)
	} else if _, err := boardlog.Verify(ctx, src, v, boardlog.VerifyOptions{}); exitcode.Of(err) != exitcode.Precondition {
		t.Errorf("Verify without the token: %v, want a precondition error", err)
	}

	for _, target := range []string{"/board/log/" + strings.ToLower(dataset) + "/../../../keys/board-log.key", "/board/log/..%2Fkeys/board-log.key",
		"/board/log/keys/board-log.key", "/board/log/" + strings.ToLower(dataset) + "/tile/8/0/000.p/4/../../../../../../keys/board-log.key"} {
		if code, body := raw(t, base, target, ""); code == 200 || strings.Contains(body, "PRIVATE") {
			t.Errorf("GET %s: %d %q", target, code, body)
		}
	}

	// The store's log rewritten and re-signed: entry 1 and 2 swapped.
	dir, _ := layout.Home(home).BoardLog(strings.ToLower(dataset))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	es[1], es[2] = es[2], es[1]
	if _, err := l.Append(ctx, es); err != nil {
		t.Fatal(err)
	}
	if _, err := boardlog.Verify(ctx, src, v, boardlog.VerifyOptions{Since: a.Signed}); exitcode.Of(err) != exitcode.Integrity {
		t.Fatalf("Verify of a reordered log against the kept checkpoint: %v, want an integrity error", err)
	}
	// And a data tile edited in place fails on its own.
	p := filepath.Join(dir, "tile/8/data/000.p/4")
	tile, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(tile, []byte("label "), []byte("label X"), 1), 0o644)
	if _, err := boardlog.Verify(ctx, src, v, boardlog.VerifyOptions{}); exitcode.Of(err) != exitcode.Integrity {
		t.Fatalf("Verify of an edited data tile: %v, want an integrity error", err)
	}
}
