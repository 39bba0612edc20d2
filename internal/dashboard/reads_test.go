package dashboard

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/runs/runstest"
)

// recordReads and each are runstest's RecordReads and Each.
var (
	recordReads = runstest.RecordReads
	each        = runstest.Each
)

// sum adds counts.
func sum(ms ...map[string]int) map[string]int {
	out := map[string]int{}
	for _, m := range ms {
		for k, v := range m {
			out[k] += v
		}
	}
	return out
}

// TestRecordReadsPerRequest: `repro serve` lists runs through the run
// index, and a request reads each record.json it needs once. The list
// and the dataset list read each record once (the index checks each
// entry it returns against its record); a dataset's board reads each of
// its runs' records once (their verification) and no other run's. Read
// from the run folders instead (Folders), the board reads each of its
// runs twice (once to list, once to verify): the count sees every read.
func TestRecordReadsPerRequest(t *testing.T) {
	home, board := boardHome(t)
	other := runstest.HumanEvalRun(t, home, []runstest.Sample{{Task: "HumanEval/0", Pass: true}}, runstest.HumanEvalOptions{Dataset: "MbppPlus-v0.2.0", Label: "m"})
	all := append(append([]string{}, board...), other)
	const boardURL = "/board?dataset=HumanEvalPlus-v0.1.10"
	for _, tc := range []struct {
		name string
		s    *Server
		// want is the reads of each record per request, by page.
		want map[string]map[string]int
	}{
		{"the run index", &Server{Home: home, Reference: fixtureReference}, map[string]map[string]int{
			"/":      each(all, 1),
			"/board": each(all, 1),
			boardURL: each(board, 1),
		}},
		{"the run folders", &Server{Home: home, Reference: fixtureReference, Runs: Folders{Home: home}}, map[string]map[string]int{
			"/":      each(all, 1),
			"/board": each(all, 1),
			boardURL: sum(each(all, 1), each(board, 1)),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := serve(t, tc.s, "127.0.0.1:0", false)
			get(t, base+"/") // the first request builds the index; later ones reuse it
			for _, page := range []string{"/", "/board", boardURL} {
				var code int
				var body string
				got := recordReads(t, home, all, func() { code, body = get(t, base+page) })
				if code != 200 || !strings.Contains(body, "coder-7b-t0.8") && !strings.Contains(body, "HumanEvalPlus-v0.1.10") {
					t.Fatalf("GET %s: %d\n%s", page, code, body)
				}
				if want := tc.want[page]; !maps.Equal(got, want) {
					t.Errorf("GET %s read the records %v times, want %v", page, got, want)
				}
			}
		})
	}
}

// TestIndexListsAsTheFolders: the run index lists what the folders'
// records say, in their order, and so does it where the index cannot be
// opened (its folder is a file): then from an index built in memory from
// the folders, with a warning.
func TestIndexListsAsTheFolders(t *testing.T) {
	home, board := boardHome(t)
	runstest.HumanEvalRun(t, home, []runstest.Sample{{Task: "HumanEval/0", Pass: true}}, runstest.HumanEvalOptions{Dataset: "MbppPlus-v0.2.0", Label: "m"})
	os.WriteFile(runs.RecordPath(home, board[1]), []byte(`{"id": `), 0o644)
	want, err := Folders{Home: home}.ListRuns(context.Background(), Filter{})
	if err != nil || len(want) != len(board)+1 || want[1].Status != "unreadable" {
		t.Fatalf("Folders: %v %v", want, err)
	}
	for _, f := range []Filter{{}, {Kind: "humaneval"}, {Dataset: "MbppPlus-v0.2.0"}, {Status: "unreadable"}} {
		want, _ := Folders{Home: home}.ListRuns(context.Background(), f)
		if got, err := (Index{Home: home}).ListRuns(context.Background(), f); err != nil || !slices.Equal(got, want) {
			t.Errorf("Index, %+v: %v %v, want %v", f, got, err, want)
		}
	}
	os.RemoveAll(layout.Home(home).Index())
	if err := os.WriteFile(layout.Home(home).Index(), []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	got, err := Index{Home: home, Warn: func(w string) { warnings = append(warnings, w) }}.ListRuns(context.Background(), Filter{})
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("Index without its database: %v %v, want %v", got, err, want)
	}
	if len(warnings) == 0 || !strings.Contains(warnings[0], "listing from the run folders") {
		t.Errorf("warnings %q", warnings)
	}
}
