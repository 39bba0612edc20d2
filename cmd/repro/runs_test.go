package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/workload"

	_ "modernc.org/sqlite"
)

// endedRuns ends runs of the given kinds under a new home through
// workload.Do, each with a result file, and returns the home and the ids,
// oldest first.
func endedRuns(t *testing.T, outcomes map[string]error, kinds ...string) (string, []string) {
	t.Helper()
	home := t.TempDir()
	var ids []string
	for _, kind := range kinds {
		workload.Do(home, kind, "test", func(r *workload.Run) error {
			ids = append(ids, r.ID)
			r.AddAsset(runs.Asset{ID: "humanevalplus-v0.1.10", SHA256: strings.Repeat("ab", 32)})
			if err := r.WriteJSON("out.json", map[string]string{"kind": kind}, 0o600); err != nil {
				t.Fatal(err)
			}
			return outcomes[kind]
		})
	}
	return home, ids
}

func listRuns(t *testing.T, home string, args ...string) ([]map[string]any, result) {
	t.Helper()
	r := repro(t, []string{"REPRO_HOME=" + home}, append([]string{"runs", "list", "--json"}, args...)...)
	var doc struct {
		Runs []map[string]any `json:"runs"`
	}
	if r.code == 0 {
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("runs list --json: %v\n%s", err, r.stdout)
		}
	}
	return doc.Runs, r
}

func TestRunsListFilters(t *testing.T) {
	home, ids := endedRuns(t, map[string]error{"edm-fid": exitcode.Errorf(exitcode.Precondition, "no GPU")}, "humaneval", "edm-fid", "humaneval")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{ids[2], ids[1], ids[0]}},
		{[]string{"--kind", "humaneval"}, []string{ids[2], ids[0]}},
		{[]string{"--status", "precondition"}, []string{ids[1]}},
		{[]string{"--dataset", "humanevalplus-v0.1.10", "--limit", "1"}, []string{ids[2]}},
		{[]string{"--digest", "sha256:ABABAB"}, []string{ids[2], ids[1], ids[0]}},
		{[]string{"--digest", "cdcdcd"}, nil},
		{[]string{"--since", "2000-01-01", "--until", "2000-12-31"}, nil},
	} {
		rows, r := listRuns(t, home, tc.args...)
		var got []string
		for _, row := range rows {
			got = append(got, row["id"].(string))
		}
		if r.code != 0 || strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("runs list %v: exit %d, %v; want %v\n%s", tc.args, r.code, got, tc.want, r.stderr)
		}
	}
	rows, _ := listRuns(t, home, "--limit", "1")
	stamp := regexp.MustCompile(`^20\d\d-\d\d-\d\d \d\d:\d\d:\d\dZ$`)
	if len(rows) != 1 || !stamp.MatchString(fmt.Sprint(rows[0]["finished_at"])) || !stamp.MatchString(fmt.Sprint(rows[0]["started_at"])) ||
		len(rows[0]["inputs"].([]any)) != 1 || len(fmt.Sprint(rows[0]["record_sha256"])) != 64 {
		t.Errorf("runs list --json row: %v", rows)
	}
	text := repro(t, []string{"REPRO_HOME=" + home}, "runs", "list", "--kind", "edm-fid")
	if text.code != 0 || !strings.Contains(text.stdout, ids[1]+"  edm-fid  precondition") {
		t.Errorf("runs list (text): %d\n%s%s", text.code, text.stdout, text.stderr)
	}
}

func TestRunsListUsage(t *testing.T) {
	home, _ := endedRuns(t, nil, "humaneval")
	for _, args := range [][]string{
		{"--digest", "xyz"}, {"--digest", "abc"}, {"--since", "last week"}, {"--until", "2026-02-30"}, {"--limit", "-1"},
	} {
		if _, r := listRuns(t, home, args...); r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("runs list %v: exit %d, stderr %q; want exit 2 and one line", args, r.code, r.stderr)
		}
	}
}

// TestRunsListRebuildsABrokenIndex: a corrupt index is reported on stderr
// and rebuilt; the list is whole.
func TestRunsListRebuildsABrokenIndex(t *testing.T) {
	home, ids := endedRuns(t, nil, "humaneval", "humaneval")
	db := layout.Home(home).RunIndex()
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	rows, r := listRuns(t, home)
	if r.code != 0 || len(rows) != len(ids) || !strings.Contains(r.stderr, "repro: warning: the run index") || !strings.Contains(r.stderr, "rebuilding it from the run folders") {
		t.Fatalf("runs list: exit %d, %d runs, stderr %q", r.code, len(rows), r.stderr)
	}
	re := repro(t, []string{"REPRO_HOME=" + home}, "runs", "reindex")
	if re.code != 0 || re.stdout != "indexed 2 runs\n" {
		t.Errorf("runs reindex: %d %q %q", re.code, re.stdout, re.stderr)
	}
}

// TestIndexNeverVouchesForARun: whatever the index says, verify reads the
// folder. A tampered run indexed as ok, and an index row for a run that
// has no folder, both fail verification.
func TestIndexNeverVouchesForARun(t *testing.T) {
	home, ids := endedRuns(t, nil, "humaneval")
	env := []string{"REPRO_HOME=" + home}
	if rows, r := listRuns(t, home); r.code != 0 || len(rows) != 1 || rows[0]["status"] != "ok" {
		t.Fatalf("runs list: %d %v %s", r.code, rows, r.stderr)
	}
	os.WriteFile(filepath.Join(layout.Home(home).Run(ids[0]), "out.json"), []byte(`{"kind": "forged"}`), 0o600)
	ghost := "humaneval-20260301T120000Z-0000ffff"
	db, err := sql.Open("sqlite", layout.Home(home).RunIndex())
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`INSERT INTO runs SELECT ?, kind, status, exit_code, started_ns, finished_ns, record_sha256, problem, fingerprint, label, model, temperature, samples_n, top_p FROM runs`, ghost)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if v := repro(t, env, "runs", "verify", ids[0]); v.code != 4 || !strings.Contains(v.stderr, "out.json") {
		t.Errorf("verify of a tampered run: %d %s", v.code, v.stderr)
	}
	if v := repro(t, env, "runs", "verify", ghost); v.code != 2 {
		t.Errorf("verify of a run only the index knows: %d %s", v.code, v.stderr)
	}
	if rows, r := listRuns(t, home); r.code != 0 || len(rows) != 1 || rows[0]["id"] != ids[0] {
		t.Errorf("runs list after the forged row: %d %v %s", r.code, rows, r.stderr)
	}
}

// TestRunsListWithoutAUsableIndex: where the index cannot be made (here a
// file sits where its folder goes), list says so and lists the folders.
func TestRunsListWithoutAUsableIndex(t *testing.T) {
	home, ids := endedRuns(t, nil, "humaneval", "edm-fid")
	idx := layout.Home(home).Index()
	os.RemoveAll(idx)
	if err := os.WriteFile(idx, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rows, r := listRuns(t, home, "--kind", "edm-fid")
	if r.code != 0 || len(rows) != 1 || rows[0]["id"] != ids[1] || !strings.Contains(r.stderr, "listing from the run folders without it") {
		t.Errorf("runs list: exit %d, %v, stderr %q", r.code, rows, r.stderr)
	}
}

// TestRunsListPastAStuckWriter: a process that holds the index's write
// lock past the busy timeout does not stop a list: it says so and lists
// the folders.
func TestRunsListPastAStuckWriter(t *testing.T) {
	home, ids := endedRuns(t, nil, "humaneval")
	if rows, r := listRuns(t, home); r.code != 0 || len(rows) != 1 {
		t.Fatalf("runs list: %d %v %s", r.code, rows, r.stderr)
	}
	db, err := sql.Open("sqlite", layout.Home(home).RunIndex())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	running, err := runs.Create(home, "edm-fid") // a new folder: the list must write
	if err != nil {
		t.Fatal(err)
	}
	rows, r := listRuns(t, home)
	status := map[any]any{}
	for _, row := range rows {
		status[row["id"]] = row["status"]
	}
	if r.code != 0 || len(rows) != 2 || status[running.ID] != "incomplete" || status[ids[0]] != "ok" || !strings.Contains(r.stderr, "listing from the run folders without it") {
		t.Errorf("runs list: exit %d, %v, stderr %q", r.code, rows, r.stderr)
	}
}
