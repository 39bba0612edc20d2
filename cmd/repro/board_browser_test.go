package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/testenv"
	"github.com/reprolab/repro/internal/testenv/chromium"
)

// miniSamples writes samples for tasks [from, to) of HumanEval+: each
// task's sample is what body gives for it (its prompt and canonical
// solution, its entry point).
func miniSamples(t *testing.T, from, to int, body func(i int, prompt, canonical, entry string) string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(sharedData(t), "humanevalplus-v0.1.10", "HumanEvalPlus.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(zr)
	var lines []string
	for i := 0; i < to; i++ {
		var task struct {
			TaskID     string `json:"task_id"`
			Prompt     string `json:"prompt"`
			Canonical  string `json:"canonical_solution"`
			EntryPoint string `json:"entry_point"`
		}
		if err := dec.Decode(&task); err != nil {
			t.Fatal(err)
		}
		if i >= from {
			lines = append(lines, sampleLine(task.TaskID, body(i, task.Prompt, task.Canonical, task.EntryPoint)))
		}
	}
	return writeSamples(t, lines...)
}

// scoreRun runs repro score in the lab home with args and returns the
// run's id.
func scoreRun(t *testing.T, lab string, args ...string) string {
	t.Helper()
	r := repro(t, []string{"REPRO_HOME=" + lab}, append([]string{"humaneval", "--dataset", "humanevalplus-mini", "--json"}, args...)...)
	h := parseHumanEvalJSON(t, r)
	if r.code != 0 || h.RunID == "" {
		t.Fatalf("repro score %q: exit %d\n%s", args, r.code, r.stderr)
	}
	return h.RunID
}

// exportRun exports run id of lab into a bundle.
func exportRun(t *testing.T, lab, id string) string {
	t.Helper()
	bundle := filepath.Join(t.TempDir(), id+".tar")
	if r := repro(t, []string{"REPRO_HOME=" + lab}, "runs", "export", id, "--out", bundle); r.code != 0 {
		t.Fatalf("runs export %s: %d %s", id, r.code, r.stderr)
	}
	return bundle
}

// labKey is lab's trust entry as `repro keys export --trust-file` prints
// it, named name.
func labKey(t *testing.T, lab, name string) map[string]any {
	t.Helper()
	r := repro(t, []string{"REPRO_HOME=" + lab}, "keys", "export", "--trust-file")
	var tf struct {
		Keys []map[string]any `json:"keys"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &tf) != nil || len(tf.Keys) != 1 {
		t.Fatalf("keys export --trust-file: %d %s", r.code, r.stdout)
	}
	tf.Keys[0]["name"] = name
	return tf.Keys[0]
}

// TestBoardSubmissionsInBrowser: five submissions reach a maintainer, who
// imports them against the labs' keys and serves the board of
// humanevalplus-mini; a person sees the honest run ranked, alone, and
// every other run unranked with its reason. The submissions are made for
// real, by repro in the labs' own homes, signed with their own keys:
//
//   - honest (lab A): all 164 tasks, every fifth task's body wrong;
//   - always-equal (lab A): samples that return an object equal to
//     anything, scored with --engine evalplus, whose comparison takes them;
//   - forged (lab B): four wrong samples, their record re-signed to claim
//     97.5% of 164 tasks;
//   - mini-as-full (lab B): four right samples, their record re-signed to
//     claim the whole dataset;
//   - a squat (lab B): a genuine run of four tasks under lab A's label
//     coder-7b, whose record lab B re-signed with the id of lab A's run and
//     which is imported first.
func TestBoardSubmissionsInBrowser(t *testing.T) {
	tree := testenv.Getenv(t, "REPRO_TEST_EVALPLUS_TREE", "a checkout of evalplus at 26d6d00 (scripts/test.sh uses ../shared/engines/evalplus-26d6d00)")
	labA, labB, maintainer := humanevalHome(t, true), humanevalHome(t, false), humanevalHome(t, false)

	honest := scoreRun(t, labA, "--label", "coder-7b", "--model", "org/coder-7b", "--sampling", "temperature=0,n=1", "--samples",
		miniSamples(t, 0, 164, func(i int, prompt, canonical, _ string) string {
			if i%5 == 0 {
				return prompt + "    return None\n"
			}
			return prompt + canonical
		}))
	yes := miniSamples(t, 0, 4, func(_ int, _, _, entry string) string {
		return "class Yes:\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\ndef " + entry + "(*a, **k):\n    return Yes()\n"
	})
	evalplus := scoreRun(t, labA, "--label", "always-equal", "--engine", "evalplus", "--evalplus-tree", tree, "--tasks", "0-3", "--samples", yes)

	wrong := miniSamples(t, 0, 4, func(_ int, prompt, _, _ string) string { return prompt + "    return None\n" })
	right := miniSamples(t, 0, 4, func(_ int, prompt, canonical, _ string) string { return prompt + canonical })
	forged := scoreRun(t, labB, "--label", "forged", "--tasks", "0-3", "--samples", wrong)
	resign(t, labB, forged, func(rec *runs.Record) {
		s := rec.Summary.(map[string]any)
		s["tasks"], s["subset"] = 164, false
		s["base_pass_at_k"] = map[string]float64{"pass@1": 0.975}
		s["plus_pass_at_k"] = map[string]float64{"pass@1": 0.975}
	})
	subset := scoreRun(t, labB, "--label", "mini-as-full", "--tasks", "0-3", "--samples", right)
	resign(t, labB, subset, func(rec *runs.Record) {
		s := rec.Summary.(map[string]any)
		s["tasks"], s["subset"] = 164, false
	})
	squat := scoreRun(t, labB, "--label", "coder-7b", "--model", "org/coder-7b", "--tasks", "0-3", "--samples", right)
	resign(t, labB, squat, func(rec *runs.Record) { rec.ID = honest })

	submitters := filepath.Join(t.TempDir(), "submitters.json")
	tb, _ := json.Marshal(map[string]any{"version": 1, "keys": []any{labKey(t, labA, "lab-a"), labKey(t, labB, "lab-b")}})
	if err := os.WriteFile(submitters, tb, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"REPRO_HOME=" + maintainer}
	// Lab B's bundle that names lab A's run id comes first.
	bundles := []string{exportRun(t, labB, squat), exportRun(t, labA, honest), exportRun(t, labA, evalplus), exportRun(t, labB, forged), exportRun(t, labB, subset)}
	r := repro(t, env, append(append([]string{"runs", "import"}, bundles...), "--trust", submitters)...)
	ids := map[string]string{}
	for _, m := range importedAs.FindAllStringSubmatch(r.stdout, -1) {
		ids[m[1]] = m[2]
	}
	if r.code != 0 || len(importedAs.FindAllString(r.stdout, -1)) != 5 {
		t.Fatalf("runs import: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	base := serveHome(t, maintainer)
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"board?dataset=humanevalplus-mini-v0.1.10"), chromedp.WaitVisible(chromedp.CSS("#board"))); err != nil {
		t.Fatalf("browser: open the board: %v", err)
	}
	// What a person reads on each row: rank, label, signer, engine and the
	// reasons it is not ranked.
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]map[string]string](`Array.from(document.querySelectorAll("#board tr[data-run]")).map(r => ({
		run: r.dataset.run, rank: r.cells[0].innerText, label: r.querySelector("a.label").innerText,
		evidence: r.querySelector("td.evidence").innerText.replace(/\n/g, " "), engine: r.querySelector(".engine").innerText,
		reasons: (r.querySelector(".reasons") || {innerText: ""}).innerText.replace(/\n/g, " ")}))`))
	if err != nil {
		t.Fatalf("browser: read the board: %v", err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	saveArtifact(t, "leaderboard-submissions.png", png)

	want := map[string]struct {
		rank, label, signer, engine string
		reasons                     []string
	}{
		ids[honest]:   {"1", "coder-7b", "lab-a", "engine repro", nil},
		ids[evalplus]: {"–", "always-equal", "lab-a", "engine evalplus", []string{`scored by engine "evalplus", not repro's`, "a subset of the tasks: 4 of 164 scored"}},
		ids[forged]: {"–", "forged", "lab-b", "engine repro", []string{"its record's summary is not what its verdicts give: the record claims 164 tasks, the results hold 4",
			"a subset of the tasks: 4 of 164 scored"}},
		ids[subset]: {"–", "mini-as-full", "lab-b", "engine repro", []string{"its record's summary is not what its verdicts give: the record claims 164 tasks, the results hold 4",
			"a subset of the tasks: 4 of 164 scored"}},
	}
	squatID := ""
	if len(rows) != 5 {
		t.Fatalf("the board shows %d rows, want 5: %v", len(rows), rows)
	}
	ranked := 0
	for _, row := range rows {
		if row["rank"] != "–" {
			ranked++
		}
		w, ok := want[row["run"]]
		if !ok {
			// Lab B's squat: its own row, under its own signer, not ranked.
			if !strings.HasPrefix(row["run"], "humaneval-") || row["label"] != "coder-7b" || !strings.Contains(row["evidence"], "signed by lab-b") ||
				row["rank"] != "–" || !strings.Contains(row["reasons"], "a subset of the tasks: 4 of 164 scored") {
				t.Errorf("lab B's coder-7b row: %v", row)
			}
			squatID = row["run"]
			continue
		}
		if row["rank"] != w.rank || row["label"] != w.label || !strings.Contains(row["evidence"], "✔ verified") || !strings.Contains(row["evidence"], "signed by "+w.signer) || row["engine"] != w.engine {
			t.Errorf("row %v, want rank %s, label %s, signed by %s, %s", row, w.rank, w.label, w.signer, w.engine)
		}
		for _, reason := range w.reasons {
			if !strings.Contains(row["reasons"], reason) {
				t.Errorf("%s: the reasons shown %q lack %q", w.label, row["reasons"], reason)
			}
		}
		if w.reasons == nil && row["reasons"] != "" {
			t.Errorf("%s is ranked, yet shows reasons %q", w.label, row["reasons"])
		}
	}
	if ranked != 1 || squatID == "" || squatID == ids[honest] {
		t.Errorf("%d rows ranked (want the honest one only); lab B's squat is %q, lab A's run %q", ranked, squatID, ids[honest])
	}
	// The forged run shows what its verdicts give, not the 97.5% its
	// record claims, anywhere on the page.
	if page, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`)); err != nil || strings.Contains(page, "97.5%") {
		t.Errorf("the page shows the forged claim of 97.5%% (%v)", err)
	}
}

// serveHome runs `repro serve` on home on a loopback port until the test
// ends and returns its base URL.
func serveHome(t *testing.T, home string) string {
	t.Helper()
	cmd := exec.Command(reproBin, "serve", "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "REPRO_HOME="+home)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("repro serve printed no address: %v", err)
	}
	u := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/`).FindString(line)
	if u == "" {
		t.Fatalf("repro serve printed %q", line)
	}
	return u
}

// browser starts Debian's chromium, headless, for the test (three
// minutes at most: the board verifies every run for each request).
func browser(t *testing.T) context.Context {
	t.Helper()
	return chromium.Start(t, 3*time.Minute, 1400, 900)
}

// saveArtifact writes a file into the test's artifact folder and into
// $REPRO_TEST_ARTIFACTS when set.
func saveArtifact(t *testing.T, name string, data []byte) {
	t.Helper()
	dirs := []string{t.ArtifactDir()}
	if d := os.Getenv("REPRO_TEST_ARTIFACTS"); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s", name, filepath.Join(d, name))
	}
}
