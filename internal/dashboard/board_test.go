package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/report"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/runs/runstest"
)

// boardHome copies the report package's board fixture: five signed runs
// of four labels on HumanEvalPlus-v0.1.10, the newest of which (label
// edited-results) had its record edited after signing to claim 95%.
func boardHome(t *testing.T) (string, []string) {
	t.Helper()
	home := t.TempDir()
	if out, err := exec.Command("cp", "-R", "../report/testdata/board-home/.", home).CombinedOutput(); err != nil {
		t.Fatalf("copy the board fixture: %v %s", err, out)
	}
	ids, err := runs.List(home)
	if err != nil || len(ids) != 5 {
		t.Fatalf("board fixture: %v %v", ids, err)
	}
	return home, ids
}

// fixtureReference is the reference profile the fixture's runs match (as
// internal/report's board tests make it): its 12 synthetic tasks, asset
// pin and dataset hash, repro's engine, its two images and harness, the
// default limits.
func fixtureReference(string) *report.Reference {
	ref := &report.Reference{Dataset: "humanevalplus-v0.1.10", Assets: []runs.Asset{{ID: "humanevalplus-v0.1.10", SHA256: strings.Repeat("ab", 32), Size: 1234}},
		DatasetMD5: "fe585eb4df8c88d844eeb463ea4d0302", Engine: "repro", Harness: "sha256:" + strings.Repeat("4", 64), Limits: codebench.DefaultRunLimits(),
		Images: []string{"sha256:" + strings.Repeat("1", 64), "sha256:" + strings.Repeat("2", 64)}}
	for i := range 12 {
		ref.Tasks = append(ref.Tasks, fmt.Sprintf("HumanEval/%d", i))
	}
	return ref
}

var boardRow = regexp.MustCompile(`(?s)<tr class="([a-z]*)" data-run="([^"]+)">\s*<td class="rank">([^<]*)</td>\s*<td><a class="label" href="/runs/[^"]+">([^<]+)</a>`)

// rowsOf reads the board's table as "rank label class" lines.
func rowsOf(body string) []string {
	var out []string
	for _, m := range boardRow.FindAllStringSubmatch(body, -1) {
		out = append(out, strings.TrimSpace(m[3]+" "+m[4]+" "+m[1]))
	}
	return out
}

func TestBoardPage(t *testing.T) {
	home, ids := boardHome(t)
	base := serve(t, &Server{Home: home, Reference: fixtureReference}, "127.0.0.1:0", false)

	code, body := get(t, base+"/board")
	if code != 200 || !strings.Contains(body, `href="/board?dataset=HumanEvalPlus-v0.1.10"`) || !strings.Contains(body, "<td>5</td>") {
		t.Fatalf("GET /board: %d\n%s", code, body)
	}
	if _, list := get(t, base+"/"); !strings.Contains(list, `href="/board"`) || !strings.Contains(list, "<td>coder-7b-t0.8</td>") {
		t.Errorf("the run list lacks the link to the boards or the labels")
	}
	code, body = get(t, base+"/board?dataset=HumanEvalPlus-v0.1.10")
	if code != 200 {
		t.Fatalf("board: %d\n%s", code, body)
	}
	if got, want := strings.Join(rowsOf(body), "; "), "1 coder-7b; 2 coder-7b-t0.8; 3 tiny-1b; – edited-results unverified"; got != want {
		t.Errorf("board rows %q, want %q", got, want)
	}
	if strings.Contains(body, "95.0%") {
		t.Errorf("the board shows the 95%% the edited record claims")
	}
	for _, want := range []string{"✘ NOT verified", "signed by local", "engine repro", `href="/compare?a=` + ids[3] + `&amp;b=`, "Tasks solved, per run", `href="/board?all=1&amp;dataset=HumanEvalPlus-v0.1.10`} {
		if !strings.Contains(body, want) {
			t.Errorf("board lacks %q", want)
		}
	}
	code, body = get(t, base+"/board?dataset=humanevalplus-v0.1.10&sort=label&order=desc")
	if got, want := strings.Join(rowsOf(body), "; "), "3 tiny-1b; – edited-results unverified; 2 coder-7b-t0.8; 1 coder-7b"; code != 200 || got != want {
		t.Errorf("sorted by label, descending: %d %q, want %q", code, got, want)
	}
	_, body = get(t, base+"/board?dataset=HumanEvalPlus-v0.1.10&all=1")
	if n := len(rowsOf(body)); n != 5 {
		t.Errorf("every run: %d rows, want 5", n)
	}
	for _, q := range []string{"sort=rank%27", "sort=plus@7", "order=sideways"} {
		if code, body := get(t, base+"/board?dataset=HumanEvalPlus-v0.1.10&"+q); code != http.StatusNotFound || !strings.Contains(body, "unknown sort") {
			t.Errorf("?%s: %d", q, code)
		}
	}
	if code, body := get(t, base+"/board?dataset=MbppPlus-v0.2.0"); code != 200 || !strings.Contains(body, "No HumanEval run of MbppPlus-v0.2.0") {
		t.Errorf("a dataset without runs: %d", code)
	}
	resp, err := http.Get(base + "/board?dataset=HumanEvalPlus-v0.1.10")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); csp != policy {
		t.Errorf("board CSP %q", csp)
	}
}

// TestBoardHostileText: a label, a model and a dataset name from a record
// reach the board and the dataset list as text.
func TestBoardHostileText(t *testing.T) {
	home := t.TempDir()
	runstest.HumanEvalRun(t, home, []runstest.Sample{{Task: "HumanEval/0", Pass: true}}, runstest.HumanEvalOptions{Label: hostile, Model: hostile, Dataset: hostile})
	os.WriteFile(home+"/secret.txt", []byte("SECRET"), 0o644)
	base := serve(t, &Server{Home: home}, "127.0.0.1:0", false)
	for _, u := range []string{"/", "/board", "/board?dataset=" + url.QueryEscape(hostile), "/board?dataset=" + url.QueryEscape(hostile) + "&sort=label"} {
		code, body := get(t, base+u)
		if code != 200 || strings.Contains(body, "<script") || strings.Contains(body, "<img") || !strings.Contains(body, "&lt;script&gt;") {
			t.Errorf("GET %s: %d; hostile text reached the page as markup, or not at all", u, code)
		}
	}
	if code, body := get(t, base+"/board?dataset=..%2Fsecret.txt"); strings.Contains(body, "SECRET") || code != 200 {
		t.Errorf("a dataset name reached a file: %d", code)
	}
}
