package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/runs/runstest"
)

// reproduceJSON is the part of `runs reproduce --json` the tests read.
type reproduceJSON struct {
	RunID      string `json:"run_id"`
	Agrees     bool   `json:"agrees"`
	Verdicts   int    `json:"verdicts"`
	Agree      int    `json:"agree"`
	Submission struct {
		RunID        string `json:"run_id"`
		Signer       string `json:"signer"`
		SignerKeyID  string `json:"signer_key_id"`
		BundleSHA256 string `json:"bundle_sha256"`
	} `json:"submission"`
	Differences []struct {
		Task      string `json:"task"`
		Phase     string `json:"phase"`
		Submitted struct {
			Status string `json:"status"`
		} `json:"submitted"`
		Reexecuted struct {
			Status string `json:"status"`
		} `json:"reexecuted"`
	} `json:"differences"`
	Run struct {
		RunID string `json:"run_id"`
		Tasks int    `json:"tasks"`
	} `json:"run"`
}

// forgeVerdict rewrites the results file of run id of home so that its
// first failing sample passes, and signs the run again with home's key:
// a forgery by a submitter whose key the maintainer trusts.
func forgeVerdict(t *testing.T, home, id string) {
	t.Helper()
	r, err := runs.Open(home, id)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(r.Dir, "eval_results.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	forged := false
	for _, task := range []string{"HumanEval/0", "HumanEval/2"} {
		for _, e := range res["eval"].(map[string]any)[task].([]any) {
			e := e.(map[string]any)
			if e["base_status"] == "fail" && !forged {
				e["base_status"], e["plus_status"] = "pass", "pass"
				e["base_fail_tests"], e["plus_fail_tests"] = []any{}, []any{}
				delete(e, "base_reason")
				delete(e, "plus_reason")
				forged = true
			}
		}
	}
	if !forged {
		t.Fatal("no failing sample to forge")
	}
	b, _ = json.Marshal(res)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rec, _, err := r.ReadRecord()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Finish(rec, rec.ExitCode); err != nil {
		t.Fatal(err)
	}
}

// TestRunsReproduce: a lab scores two tasks of HumanEval+ Mini twice in
// its sandbox and sends both runs as bundles; it rewrote the results file
// of the second to turn a failing sample into a pass, and signed it again
// with its key, which the maintainer trusts. Both bundles verify and are
// imported. The maintainer re-executes both in a sandbox of its own: the
// honest run agrees verdict by verdict (exit 0), the forged one does not
// (exit 1, the forged verdict named with both sides), each re-execution is
// a signed run that names its submission, and the board shows both
// outcomes and, under the maintainer's require_reexecution policy, never
// ranks the forged run.
func TestRunsReproduce(t *testing.T) {
	lab := humanevalHome(t, true)
	labEnv := []string{"REPRO_HOME=" + lab}
	example := filepath.Join("..", "..", "examples", "humaneval-samples.jsonl")
	var ids []string
	for _, label := range []string{"honest-lab", "forged-lab"} {
		r := repro(t, labEnv, "humaneval", "--samples", example, "--dataset", "humanevalplus-mini", "--tasks", "0,2", "--label", label, "--json")
		h := parseHumanEvalJSON(t, r)
		if r.code != 0 || h.Summary == nil || h.Summary.BasePassed == h.Summary.Samples {
			t.Fatalf("lab run %s: exit %d %s", label, r.code, r.stderr)
		}
		ids = append(ids, h.RunID)
	}
	honest, forged := ids[0], ids[1]
	forgeVerdict(t, lab, forged)
	bundles := map[string]string{}
	for _, id := range ids {
		bundles[id] = filepath.Join(t.TempDir(), id+".tar")
		if r := repro(t, labEnv, "runs", "export", id, "--out", bundles[id]); r.code != 0 {
			t.Fatalf("runs export: %d %s", r.code, r.stderr)
		}
	}
	tr := repro(t, labEnv, "keys", "export", "--trust-file")
	submitters := filepath.Join(t.TempDir(), "submitters.json")
	if err := os.WriteFile(submitters, []byte(strings.Replace(tr.stdout, `"name": "local"`, `"name": "lab"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}

	home := humanevalHome(t, false)
	env := []string{"REPRO_HOME=" + home}
	if r := repro(t, env, "runs", "import", bundles[honest], bundles[forged], "--trust", submitters); r.code != 0 {
		t.Fatalf("runs import of an honest and a re-signed forged bundle: %d %s %s", r.code, r.stdout, r.stderr)
	}

	r := repro(t, env, "runs", "reproduce", bundles[honest], "--trust", submitters, "--json")
	var ok reproduceJSON
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ok) != nil {
		t.Fatalf("runs reproduce of the honest bundle: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	bundleBytes, _ := os.ReadFile(bundles[honest])
	if !ok.Agrees || ok.Verdicts == 0 || ok.Agree != ok.Verdicts || len(ok.Differences) != 0 || ok.Run.Tasks != 2 ||
		ok.Submission.RunID != honest || ok.Submission.Signer != "lab" || ok.Submission.BundleSHA256 != digest.Of(bundleBytes).Hex() || ok.RunID != ok.Run.RunID {
		t.Fatalf("the honest re-execution: %+v", ok)
	}
	if !strings.HasPrefix(ok.RunID, "reproduce-") {
		t.Errorf("re-execution run id %q", ok.RunID)
	}
	if v := repro(t, env, "runs", "verify", ok.RunID); v.code != 0 || !strings.Contains(v.stdout, `signed by trusted key "local"`) {
		t.Errorf("the re-execution's run does not verify with the local key: %d %s %s", v.code, v.stdout, v.stderr)
	}
	show := repro(t, env, "runs", "show", ok.RunID)
	var rec struct {
		Kind  string
		Extra struct {
			Reproduction struct {
				Submission struct {
					RunID        string `json:"run_id"`
					SignerKeyID  string `json:"signer_key_id"`
					BundleSHA256 string `json:"bundle_sha256"`
				}
				Agrees bool
			}
		}
		Limits struct {
			BaseOnly bool `json:"base_only"`
			Cache    bool `json:"cache"`
		}
	}
	if json.Unmarshal([]byte(show.stdout), &rec) != nil || rec.Kind != "reproduce" || rec.Extra.Reproduction.Submission.RunID != honest ||
		rec.Extra.Reproduction.Submission.SignerKeyID != ok.Submission.SignerKeyID || rec.Extra.Reproduction.Submission.BundleSHA256 != ok.Submission.BundleSHA256 ||
		!rec.Extra.Reproduction.Agrees || rec.Limits.BaseOnly || rec.Limits.Cache {
		t.Errorf("the re-execution's record does not name its submission under the reference profile:\n%s", show.stdout)
	}

	r = repro(t, env, "runs", "reproduce", bundles[forged], "--trust", submitters)
	if r.code != int(exitcode.Negative) || !regexp.MustCompile(`\d+ of \d+ verdicts agree, 2 differ`).MatchString(r.stdout) ||
		!regexp.MustCompile(`HumanEval/[02] #\d base: submitted pass, re-executed fail`).MatchString(r.stdout) {
		t.Fatalf("runs reproduce of the forged bundle: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// A bundle that does not verify: nothing runs, exit 4.
	if r := repro(t, []string{"REPRO_HOME=" + home}, "runs", "reproduce", bundles[honest]); r.code != int(exitcode.Integrity) {
		t.Errorf("a bundle signed by a key the trust file does not list: exit %d, want 4\n%s", r.code, r.stderr)
	}

	tb, err := os.ReadFile(filepath.Join(home, "trust.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tf map[string]any
	if err := json.Unmarshal(tb, &tf); err != nil {
		t.Fatal(err)
	}
	tf["leaderboard"] = map[string]any{"require_reexecution": true}
	tb, _ = json.Marshal(tf)
	if err := os.WriteFile(filepath.Join(home, "trust.json"), tb, 0o644); err != nil {
		t.Fatal(err)
	}
	site := filepath.Join(t.TempDir(), "site")
	if r := repro(t, env, "report", "--leaderboard", "humanevalplus-mini-v0.1.10", "--out", site); r.code != 0 {
		t.Fatalf("report --leaderboard: %d %s", r.code, r.stderr)
	}
	page, _ := os.ReadFile(filepath.Join(site, "all.html"))
	row := func(id string) string {
		return regexp.MustCompile(`(?s)<tr class="[a-z]*" data-run="` + id + `">.*?</tr>`).FindString(string(page))
	}
	// Imported runs are kept under ids that carry their signer's key id.
	importedAs := func(id string) string {
		t.Helper()
		iid, err := runs.ImportedID(id, ok.Submission.SignerKeyID)
		if err != nil {
			t.Fatal(err)
		}
		return iid
	}
	if h := row(importedAs(honest)); !strings.Contains(h, fmt.Sprintf("re-executed: %d of %d verdicts agree", ok.Verdicts, ok.Verdicts)) || !strings.Contains(h, "signed by lab") {
		t.Errorf("the honest row:\n%s", h)
	}
	if f := row(importedAs(forged)); !strings.Contains(f, `class="unranked"`) || !strings.Contains(f, `<small class="differs"`) || !strings.Contains(f, "submitted pass, re-executed fail") {
		t.Errorf("the forged row:\n%s", f)
	}
	if !strings.Contains(string(page), "ranked only when its re-execution on this machine") {
		t.Errorf("the board does not state the policy")
	}
}

// swappedSamplesRun writes a signed humaneval run under home through the
// runs API whose workspace holds a samples copy other than the one its
// record names: a submitter that signs a record of its real samples but
// ships programs of its choice. It returns the run id.
func swappedSamplesRun(t *testing.T, home string) string {
	t.Helper()
	r, err := runs.Create(home, "humaneval")
	if err != nil {
		t.Fatal(err)
	}
	real := []byte(`{"task_id": "HumanEval/0", "completion": "    return False\n"}` + "\n")
	shipped := []byte(`{"task_id": "HumanEval/0", "completion": "    return True\n"}` + "\n")
	if err := os.MkdirAll(filepath.Join(r.Dir, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "workspace", "samples.jsonl"), shipped, 0o444); err != nil {
		t.Fatal(err)
	}
	res := `{"date":"2026-12-05 01:00","hash":"h","eval":{"HumanEval/0":[{"task_id":"HumanEval/0","solution":"x","base_status":"pass","plus_status":"pass","base_fail_tests":[],"plus_fail_tests":[]}]},"pass_at_k":{}}`
	if err := os.WriteFile(filepath.Join(r.Dir, "eval_results.json"), []byte(res), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := r.NewRecord("v0.0.0-test")
	rec.Assets = []runs.Asset{{ID: "humanevalplus-mini-v0.1.10", SHA256: strings.Repeat("ab", 32)}}
	rec.Summary = map[string]any{"tasks": 1, "subset": true}
	rec.Extra = map[string]any{"dataset": "HumanEvalPlus-Mini-v0.1.10", "engine": "repro", "label": "swapped",
		"samples": map[string]any{"format": "jsonl", "sha256": digest.Of(real).Hex()}, "summary": map[string]any{"subset": true}}
	if err := r.Finish(rec, 0); err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// TestRunsReproduceRefuses: what cannot be re-executed stops before
// anything runs, with the documented exit code: an unreadable path (2), a
// bundle no trusted key signed (4), a run of the canonical solutions or
// without samples (2), and a bundle whose samples copy is not the samples
// its signed record names (4).
func TestRunsReproduceRefuses(t *testing.T) {
	lab := t.TempDir()
	labEnv := []string{"REPRO_HOME=" + lab}
	noSamples := runstest.HumanEvalRun(t, lab, []runstest.Sample{{Task: "HumanEval/0", Pass: true}}, runstest.HumanEvalOptions{Label: "no-samples"})
	swapped := swappedSamplesRun(t, lab)
	bundle := func(id string) string {
		p := filepath.Join(t.TempDir(), id+".tar")
		if r := repro(t, labEnv, "runs", "export", id, "--out", p); r.code != 0 {
			t.Fatalf("runs export: %d %s", r.code, r.stderr)
		}
		return p
	}
	tr := repro(t, labEnv, "keys", "export", "--trust-file")
	submitters := filepath.Join(t.TempDir(), "submitters.json")
	if err := os.WriteFile(submitters, []byte(tr.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	home := []string{"REPRO_HOME=" + t.TempDir()}
	for _, tc := range []struct {
		name string
		args []string
		want exitcode.Code
		msg  string
	}{
		{"unreadable path", []string{filepath.Join(t.TempDir(), "missing.tar"), "--trust", submitters}, exitcode.Usage, "not a readable regular file"},
		{"not signed by a trusted key", []string{bundle(noSamples), "--trust", writeTrustOfNewKey(t)}, exitcode.Integrity, "not signed by a trusted key"},
		{"no samples", []string{bundle(noSamples), "--trust", submitters}, exitcode.Usage, "not submitted samples"},
		{"samples swapped under a signed record", []string{bundle(swapped), "--trust", submitters}, exitcode.Integrity, "the samples copy in the run's workspace has sha256"},
	} {
		r := repro(t, home, append([]string{"runs", "reproduce"}, tc.args...)...)
		if r.code != int(tc.want) || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("%s: exit %d, want %d with %q\n%s", tc.name, r.code, tc.want, tc.msg, r.stderr)
		}
	}
	if ids, _ := os.ReadDir(filepath.Join(strings.TrimPrefix(home[0], "REPRO_HOME="), "runs")); len(ids) != 0 {
		t.Errorf("a refused bundle left %d runs", len(ids))
	}
}

// writeTrustOfNewKey writes a trust file of a key that signed nothing.
func writeTrustOfNewKey(t *testing.T) string {
	t.Helper()
	other := []string{"REPRO_HOME=" + t.TempDir()}
	runstest.HumanEvalRun(t, strings.TrimPrefix(other[0], "REPRO_HOME="), nil, runstest.HumanEvalOptions{})
	tr := repro(t, other, "keys", "export", "--trust-file")
	p := filepath.Join(t.TempDir(), "other.json")
	if err := os.WriteFile(p, []byte(tr.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
