package mllog

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The agreement tests run the upstream checker and summarizer
// (mlcommons/logging, pure Python plus PyYAML) next to ours. The upstream
// code is not part of this repository and cannot be installed from Debian,
// so these tests run only when MLPERF_LOGGING_DIR names a checkout (the
// directory that holds the mlperf_logging package), even under CI.

func upstreamChecker(t *testing.T) (python, dir string) {
	t.Helper()
	dir = os.Getenv("MLPERF_LOGGING_DIR")
	if dir == "" {
		t.Skip("MLPERF_LOGGING_DIR is not set; set it to a mlcommons/logging checkout to compare with the upstream checker")
	}
	if _, err := os.Stat(filepath.Join(dir, "mlperf_logging", "compliance_checker", "training_2.1.0", "common.yaml")); err != nil {
		t.Fatalf("MLPERF_LOGGING_DIR=%s holds no mlperf_logging package with the 2.1.0 rules: %v", dir, err)
	}
	python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import yaml").Run(); err != nil {
		requireComponent(t, "python3-yaml for /usr/bin/python3", "apt-get install python3-yaml")
	}
	return python, dir
}

// upstreamVerdict runs the compliance checker on one file.
func upstreamVerdict(t *testing.T, python, dir, file string) (bool, string) {
	t.Helper()
	cmd := exec.Command(python, "-m", "mlperf_logging.compliance_checker", "--usage", "training", "--ruleset", "2.1.0",
		"--log_output", filepath.Join(t.TempDir(), "cc.log"), file)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("run upstream checker: %v", err)
		}
		return false, string(out)
	}
	return true, string(out)
}

func TestUpstreamAgreement(t *testing.T) {
	python, dir := upstreamChecker(t)
	minigo, dlrm := realLogs(t)
	tmp := t.TempDir()
	type input struct{ name, path string }
	var inputs []input
	for _, p := range append(append([]string(nil), minigo...), dlrm...) {
		inputs = append(inputs, input{filepath.Base(filepath.Dir(p)) + "/" + filepath.Base(p), p})
	}
	for _, c := range derivedCases() {
		inputs = append(inputs, input{c.name, writeLog(t, tmp, c.name+".txt", c.derive(t, minigo[0], dlrm[0]))})
	}
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			want, out := upstreamVerdict(t, python, dir, in.path)
			l, err := ParseFile(in.path, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := Check(l, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Compliant != want {
				t.Errorf("repro compliant=%v, upstream compliant=%v\nrepro findings: %+v\nupstream output:\n%s", r.Compliant, want, r.Findings, out)
			}
		})
	}
}

// summarizerScript computes a strong-scaling score with the upstream
// result summarizer. pandas is imported by the module but not used for a
// score, so a stand-in module is enough.
const summarizerScript = `
import sys, types
sys.modules.setdefault('pandas', types.ModuleType('pandas'))
from mlperf_logging.result_summarizer import result_summarizer as rs
score, _, _ = rs._compute_strong_score_standalone(sys.argv[1], 'sys', False, sys.argv[2], 'training', '2.1.0')
print(repr(score))
`

func upstreamScore(t *testing.T, python, dir, benchmark, folder string) *float64 {
	t.Helper()
	cmd := exec.Command(python, "-c", summarizerScript, benchmark, folder)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("upstream summarizer: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	if last == "None" {
		return nil
	}
	f, err := strconv.ParseFloat(last, 64)
	if err != nil {
		t.Fatalf("upstream summarizer printed %q", out)
	}
	return &f
}

func TestUpstreamScoreAgreement(t *testing.T) {
	python, dir := upstreamChecker(t)
	minigo, dlrm := realLogs(t)
	// Sets: the real ones, and sets where one or two runs fail. The scores
	// must match to the last bit (Python 3.11 sums floats left to right).
	broken := func(l *logText) { l.remove(l.one("run_stop")) }
	for _, set := range []struct {
		bench  string
		files  []string
		breaks int
	}{{"minigo", minigo, 0}, {"dlrm", dlrm, 0}, {"minigo", minigo, 1}, {"dlrm", dlrm, 1}, {"dlrm", dlrm, 2}} {
		t.Run(fmt.Sprintf("%s-%dfailing", set.bench, set.breaks), func(t *testing.T) {
			folder := t.TempDir()
			var paths []string
			for i, p := range set.files {
				l := readLogText(t, p)
				if i < set.breaks {
					broken(l)
				}
				paths = append(paths, writeLog(t, folder, filepath.Base(p), l.String()))
			}
			want := upstreamScore(t, python, dir, set.bench, folder)
			rep, err := VerifyFiles(context.Background(), paths, Limits{}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := rep.Scores[0].Minutes
			switch {
			case want == nil && got == nil:
			case want == nil || got == nil:
				t.Errorf("score: repro %v, upstream %v (%s)", got, want, rep.Scores[0].Note)
			case *want != *got:
				t.Errorf("score: repro %v, upstream %v", *got, *want)
			}
		})
	}
}
