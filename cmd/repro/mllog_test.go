package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/mllog"
	"github.com/reprolab/repro/internal/runs/runstest"
	"github.com/reprolab/repro/internal/testenv"
)

// mllogTestLogs returns the shared MLPerf Training v2.1 result logs
// ($REPRO_MLPERF_LOGS or shared/data/mlperf-training-v2.1 in a parent
// directory); it fails under CI=true when they are missing.
func mllogTestLogs(t *testing.T) (minigo, dlrm []string) {
	t.Helper()
	dir := testenv.MLPerfLogsDir(t)
	minigo, _ = filepath.Glob(filepath.Join(dir, "dgxa100_ngc22.09_tensorflow", "minigo", "result_*.txt"))
	dlrm, _ = filepath.Glob(filepath.Join(dir, "dgxa100_ngc22.04_merlin_hugectr", "dlrm", "result_*.txt"))
	if len(minigo) != 10 || len(dlrm) != 5 {
		t.Fatalf("expected 10 MiniGo and 5 DLRM logs in %s", dir)
	}
	return minigo, dlrm
}

// runRepro runs the command line in-process and returns its exit code,
// stdout and stderr.
func TestMllogVerifyRealLogs(t *testing.T) {
	minigo, dlrm := mllogTestLogs(t)
	args := append([]string{"mllog", "verify", "--strict"}, append(minigo, dlrm...)...)
	code, out, errOut := runRepro(t, args...)
	if code != exitcode.OK {
		t.Fatalf("exit %v\n%s%s", code, out, errOut)
	}
	if strings.Count(out, "ok   ") != 15 || !strings.Contains(out, "score minigo: 188.1439 min") || !strings.Contains(out, "score dlrm: 1.6971 min") {
		t.Errorf("output:\n%s", out)
	}

	code, out, errOut = runRepro(t, append([]string{"mllog", "verify", "--json"}, append(minigo, dlrm...)...)...)
	if code != exitcode.OK {
		t.Fatalf("--json exit %v: %s", code, errOut)
	}
	var rep mllog.Report
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("--json output is not one report: %v\n%s", err, out)
	}
	if !rep.Compliant || len(rep.Files) != 15 || len(rep.Scores) != 2 || rep.Scores[1].Minutes == nil || rep.Ruleset != "2.1.0" {
		t.Errorf("report: %+v", rep)
	}
	if !strings.Contains(errOut, "score minigo") {
		t.Errorf("--json: the human summary belongs on stderr, got %q", errOut)
	}
}

func TestMllogVerifyFailures(t *testing.T) {
	_, dlrm := mllogTestLogs(t)
	b, err := os.ReadFile(dlrm[0])
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if !strings.Contains(l, `"key": "run_stop"`) {
			kept = append(kept, l)
		}
	}
	dir := t.TempDir()
	broken := filepath.Join(dir, "result_0.txt")
	if err := os.WriteFile(broken, []byte(strings.Join(kept, "")), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runRepro(t, "mllog", "verify", dlrm[1], broken)
	if code != exitcode.Negative || !strings.Contains(out, fmt.Sprintf("FAIL %q", broken)) || !strings.Contains(out, "common/run_stop/count") ||
		!strings.Contains(errOut, "1 of 2 logs are not compliant") {
		t.Errorf("broken log: exit %v\n%s%s", code, out, errOut)
	}
	code, out, _ = runRepro(t, "mllog", "verify", "--json", broken)
	var rep mllog.Report
	if code != exitcode.Negative || json.Unmarshal([]byte(out), &rep) != nil || rep.Compliant || len(rep.Files[0].Findings) == 0 {
		t.Errorf("broken log --json: exit %v\n%s", code, out)
	}

	missing := filepath.Join(dir, "result_9.txt")
	code, out, errOut = runRepro(t, "mllog", "verify", dlrm[0], missing)
	if code != exitcode.Precondition || out != "" || !strings.Contains(errOut, missing) {
		t.Errorf("missing file: exit %v out %q err %q", code, out, errOut)
	}

	for _, args := range [][]string{
		{"mllog", "verify"},
		{"mllog"},
		{"mllog", "verify", "--ruleset", "3.0.0", dlrm[0]},
		{"mllog", "verify", "--benchmark", "bert", dlrm[0]},
		{"mllog", "verify", "--no-such-flag", dlrm[0]},
	} {
		if code, _, errOut := runRepro(t, args...); code != exitcode.Usage {
			t.Errorf("%q: exit %v, want usage (%s)", args, code, errOut)
		}
	}

	code, _, _ = runRepro(t, "mllog", "verify", "--benchmark", "minigo", dlrm[0])
	if code != exitcode.Negative {
		t.Errorf("--benchmark minigo on a DLRM log: exit %v", code)
	}
}

// A log whose run_stop is dated before its run_start is printed without a
// time to train (never a negative one), with the warning that says why;
// the default verdict stays upstream's (compliant).
func TestMllogVerifyNegativeTime(t *testing.T) {
	_, dlrm := mllogTestLogs(t)
	data, err := os.ReadFile(dlrm[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if strings.Contains(l, `"key": "run_stop"`) {
			at := strings.Index(l, `"time_ms": `) + len(`"time_ms": `)
			end := at + strings.IndexByte(l[at:], ',')
			lines[i] = l[:at] + "1" + l[end:] // 1 ms after the epoch: before run_start
		}
	}
	p := filepath.Join(t.TempDir(), "result_0.txt")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runRepro(t, "mllog", "verify", p)
	if code != exitcode.OK {
		t.Fatalf("exit %v\n%s%s", code, out, errOut)
	}
	verdict := strings.SplitN(out, "\n", 2)[0]
	if verdict != "ok   "+strconv.Quote(p)+" (dlrm)" || !strings.Contains(out, "[time/negative]") {
		t.Errorf("want the verdict line without a time and the time/negative warning:\n%s", out)
	}
}

// TestMllogVerifyRecordsRun: a verification is a run with a signed record
// listing each log's digest, and its report shows the accuracy per epoch
// against the target, the time to train and the olympic score; a missing
// log leaves no run.
func TestMllogVerifyRecordsRun(t *testing.T) {
	minigo, _ := mllogTestLogs(t)
	home := t.TempDir()
	t.Setenv("REPRO_HOME", home)
	code, _, errOut := runRepro(t, append([]string{"mllog", "verify", "--strict"}, minigo...)...)
	if code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	ents, _ := os.ReadDir(filepath.Join(home, "runs"))
	if len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), "mllog-") || !strings.Contains(errOut, ents[0].Name()) {
		t.Fatalf("runs: %v\n%s", ents, errOut)
	}
	id := ents[0].Name()
	rec := runstest.Verified(t, filepath.Join(home, "runs", id))
	logs, _ := json.Marshal(rec.Extra)
	if rec.Status != "ok" || !strings.Contains(string(logs), filepath.Base(minigo[0])) || !strings.Contains(string(logs), `"benchmark":"minigo"`) {
		t.Fatalf("record: %s %s", rec.Status, logs)
	}
	code, html, errOut := runRepro(t, "report", id)
	if code != exitcode.OK || !strings.Contains(html, "✔ verified") || !strings.Contains(html, "188.1439") || !strings.Contains(html, "<polyline") || !strings.Contains(html, "target") {
		t.Fatalf("report: exit %d %s\n%s", code, errOut, html)
	}

	missing := filepath.Join(t.TempDir(), "missing.txt")
	if code, _, _ := runRepro(t, "mllog", "verify", minigo[0], missing); code != exitcode.Precondition {
		t.Fatalf("missing log: exit %d", code)
	}
	if code, _, _ := runRepro(t, "mllog", "verify", "--ruleset", "0.1", minigo[0]); code != exitcode.Usage {
		t.Fatalf("bad ruleset: exit %d", code)
	}
	if ents, _ := os.ReadDir(filepath.Join(home, "runs")); len(ents) != 1 {
		t.Fatalf("a refused verification left a run: %v", ents)
	}
}
