package mllog

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/testenv"
)

// The agreement tests run the upstream checker and summarizer
// (mlcommons/logging, pure Python plus PyYAML) next to ours. The upstream
// code is not part of this repository and cannot be installed from Debian:
// MLPERF_LOGGING_DIR names a checkout (the directory that holds the
// mlperf_logging package); scripts/test.sh points it at
// ../shared/engines/mlcommons-logging-7bbf7926.

func upstreamChecker(t *testing.T) (python, dir string) {
	t.Helper()
	dir = testenv.Getenv(t, "MLPERF_LOGGING_DIR", "a mlcommons/logging checkout (scripts/test.sh uses ../shared/engines/mlcommons-logging-7bbf7926)")
	if _, err := os.Stat(filepath.Join(dir, "mlperf_logging", "compliance_checker", "training_2.1.0", "common.yaml")); err != nil {
		t.Fatalf("MLPERF_LOGGING_DIR=%s holds no mlperf_logging package with the 2.1.0 rules: %v", dir, err)
	}
	python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import yaml").Run(); err != nil {
		testenv.Missing(t, "python3-yaml for /usr/bin/python3", "apt-get install python3-yaml")
	}
	return python, dir
}

// upstreamVerdict runs the compliance checker on one file.
func upstreamVerdict(t *testing.T, python, dir, file string) (bool, string) {
	t.Helper()
	cmd := exec.Command(python, "-B", "-m", "mlperf_logging.compliance_checker", "--usage", "training", "--ruleset", "2.1.0",
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
	cmd := exec.Command(python, "-B", "-c", summarizerScript, benchmark, folder)
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

// mutate applies one random edit to a log: delete, duplicate or move a
// line, replace a value, drop a metadata entry, rename a key or shift a
// time.
func mutate(rng *rand.Rand, l *logText) string {
	values := []string{"0", "1", "-1", "8192", "8191", "0.5", "0.49", "0.8025", "0.80249", "1.0", "2", "2.0", "true", "false",
		"null", `""`, `"x"`, `"closed"`, `"open"`, `"minigo"`, `"dlrm"`, `"success"`, "NaN", "[1]", `{"a": 1}`}
	keys := []string{"run_start", "run_stop", "init_start", "init_stop", "eval_accuracy", "epoch_start", "epoch_stop",
		"eval_start", "eval_stop", "block_start", "block_stop", "train_samples", "eval_samples", "cache_clear",
		"submission_division", "submission_benchmark", "weights_initialization", "gradient_accumulation_steps"}
	var marked []int
	for i, s := range l.lines {
		if strings.Contains(s, Marker) {
			marked = append(marked, i)
		}
	}
	i := marked[rng.IntN(len(marked))]
	switch rng.IntN(7) {
	case 0:
		l.remove(i)
		return "delete " + keyOf(l.lines[min(i, len(l.lines)-1)])
	case 1:
		l.insert(rng.IntN(len(l.lines)+1), l.lines[i])
		return "duplicate"
	case 2:
		l.move(i, rng.IntN(len(l.lines)))
		return "move"
	case 3:
		if valueRE.MatchString(l.lines[i]) {
			v := values[rng.IntN(len(values))]
			l.setValue(i, v)
			return "value " + v
		}
	case 4:
		for _, m := range []string{`, "epoch_num": `, `, "status": `, `, "tensor": `, `, "first_epoch_num": `} {
			if j := strings.Index(l.lines[i], m); j >= 0 {
				k := strings.IndexAny(l.lines[i][j+2:], ",}")
				l.lines[i] = l.lines[i][:j] + l.lines[i][j+2+k:]
				return "drop metadata"
			}
		}
	case 5:
		k := keys[rng.IntN(len(keys))]
		l.lines[i] = keyRE.ReplaceAllLiteralString(l.lines[i], `"key": "`+k+`"`)
		return "key " + k
	case 6:
		if timeRE.MatchString(l.lines[i]) {
			l.setTime(i, l.timeMS(i)+int64(rng.IntN(4_000_000))-2_000_000)
			return "time"
		}
	}
	return "none"
}

// TestUpstreamAgreementRandom compares verdicts on logs with random edits
// (MLLOG_MUTANTS of them, default 60, seeded by MLLOG_MUTANT_SEED,
// default 7).
func TestUpstreamAgreementRandom(t *testing.T) {
	python, dir := upstreamChecker(t)
	minigo, dlrm := realLogs(t)
	n := 60
	if s := os.Getenv("MLLOG_MUTANTS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	seed := uint64(7)
	if s := os.Getenv("MLLOG_MUTANT_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	rng := rand.New(rand.NewPCG(seed, 11))
	bases := []*logText{readLogText(t, minigo[0]), readLogText(t, dlrm[0])}
	tmp := t.TempDir()
	passed := 0
	defer func() { t.Logf("%d of %d mutants compliant upstream", passed, n) }()
	for k := range n {
		l := bases[k%2].clone()
		var edits []string
		for range 1 + rng.IntN(3) {
			edits = append(edits, mutate(rng, l))
		}
		p := writeLog(t, tmp, fmt.Sprintf("mutant%d.txt", k), l.String())
		want, out := upstreamVerdict(t, python, dir, p)
		if want {
			passed++
		}
		r := checkText(t, l.String(), Options{})
		if r.Compliant != want {
			t.Errorf("mutant %d (%s): repro compliant=%v, upstream %v\nrepro: %+v\nupstream:\n%s", k, strings.Join(edits, ", "), r.Compliant, want, r.Errors(), out)
		}
	}
}
