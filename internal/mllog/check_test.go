package mllog

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// timesFromText finds run_start and run_stop times in the raw text with
// a regular expression, independently of the parser.
func timesFromText(t *testing.T, path string) (start, stop int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`"time_ms": (\d+), "event_type": "[A-Z_]+", "key": "(run_start|run_stop)"`)
	m := re.FindAllStringSubmatch(string(b), -1)
	if len(m) != 2 || m[0][2] != "run_start" || m[1][2] != "run_stop" {
		t.Fatalf("%s: expected one run_start then one run_stop, got %v", path, m)
	}
	start, _ = strconv.ParseInt(m[0][1], 10, 64)
	stop, _ = strconv.ParseInt(m[1][1], 10, 64)
	return start, stop
}

func TestRealLogsCompliant(t *testing.T) {
	minigo, dlrm := realLogs(t)
	all := append(append([]string(nil), minigo...), dlrm...)
	for _, strict := range []bool{false, true} {
		rep, err := VerifyFiles(context.Background(), all, Limits{}, Options{Strict: strict})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Compliant {
			t.Errorf("strict=%v: report not compliant", strict)
		}
		want := map[string][]float64{}
		for i, r := range rep.Files {
			if !r.Compliant || len(r.Findings) != 0 {
				t.Errorf("strict=%v %s: compliant=%v findings=%v", strict, r.File, r.Compliant, r.Findings)
			}
			wantBench := "minigo"
			if i >= len(minigo) {
				wantBench = "dlrm"
			}
			if r.Benchmark != wantBench || r.Division != "closed" || r.Status != "success" {
				t.Errorf("%s: benchmark %q division %q status %q", r.File, r.Benchmark, r.Division, r.Status)
			}
			start, stop := timesFromText(t, r.File)
			minutes := float64(stop-start) / 60000
			if r.Minutes == nil || math.Abs(*r.Minutes-minutes) > 1e-9 {
				t.Errorf("%s: minutes = %v, want %v", r.File, r.Minutes, minutes)
			}
			want[wantBench] = append(want[wantBench], minutes)
		}
		if len(rep.Scores) != 2 {
			t.Fatalf("scores = %+v", rep.Scores)
		}
		for _, s := range rep.Scores {
			m := append([]float64(nil), want[s.Benchmark]...)
			sort.Float64s(m)
			m = m[1 : len(m)-1] // olympic: without fastest and slowest
			sum := 0.0
			for _, x := range m {
				sum += x
			}
			olympic := sum / float64(len(m))
			if s.Minutes == nil || math.Abs(*s.Minutes-olympic) > 1e-9 {
				t.Errorf("%s score = %v, want %v", s.Benchmark, s.Minutes, olympic)
			}
			if s.Runs != s.RequiredRuns || s.Dropped != 0 {
				t.Errorf("%s: %+v", s.Benchmark, s)
			}
		}
	}
}

// TestRealLogsScoreValues pins the scores of the shared logs to their
// readable values, so a regression shows as a number a person can check
// against the logs (see the derivation in TestRealLogsCompliant).
func TestRealLogsScoreValues(t *testing.T) {
	minigo, dlrm := realLogs(t)
	rep, err := VerifyFiles(context.Background(), append(minigo, dlrm...), Limits{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range rep.Scores {
		got[s.Benchmark] = strconv.FormatFloat(*s.Minutes, 'f', 3, 64)
	}
	// MiniGo: mean of runs 9,7,6,0,4,8,3,2 (177.573 ... 202.679);
	// DLRM: mean of runs 0,4,2 (1.69635, 1.6968, 1.6981).
	if got["minigo"] != "188.144" || got["dlrm"] != "1.697" {
		t.Errorf("scores = %v", got)
	}
}

func TestDerivedLogs(t *testing.T) {
	minigo, dlrm := realLogs(t)
	for _, c := range derivedCases() {
		t.Run(c.name, func(t *testing.T) {
			text := c.derive(t, minigo[0], dlrm[0])
			r := checkText(t, text, Options{})
			if r.Compliant != c.compliant {
				t.Fatalf("default: compliant = %v, want %v; findings %+v", r.Compliant, c.compliant, r.Findings)
			}
			if c.rule != "" {
				sev := SeverityError
				if c.compliant {
					sev = SeverityWarning
				}
				if !hasRule(r, c.rule, sev) {
					t.Errorf("default: no %s finding of rule %s in %+v", sev, c.rule, r.Findings)
				}
			}
			for _, f := range r.Findings {
				if f.Source == SourceStrict {
					t.Errorf("default mode reported a strict finding: %+v", f)
				}
			}
			s := checkText(t, text, Options{Strict: true})
			if s.Compliant != c.strictOK {
				t.Fatalf("strict: compliant = %v, want %v; findings %+v", s.Compliant, c.strictOK, s.Findings)
			}
			if c.strictRule != "" && !hasRule(s, c.strictRule, SeverityError) {
				t.Errorf("strict: no error of rule %s in %+v", c.strictRule, s.Findings)
			}
			for _, f := range s.Findings {
				if f.Severity == SeverityError && f.Message == "" {
					t.Errorf("finding without a message: %+v", f)
				}
			}
		})
	}
}

func TestFindingLines(t *testing.T) {
	minigo, _ := realLogs(t)
	l := readLogText(t, minigo[0])
	i := l.find("actual_selfplay_games_per_generation")[7]
	l.setValue(i, "8000")
	r := checkText(t, l.String(), Options{})
	var f *Finding
	for k := range r.Findings {
		if r.Findings[k].Rule == "closed_minigo/actual_selfplay_games_per_generation/check" {
			f = &r.Findings[k]
		}
	}
	if f == nil {
		t.Fatalf("no finding: %+v", r.Findings)
	}
	if f.Line != i+1 || !strings.Contains(f.Message, "8000") || !strings.Contains(f.Message, "8192") {
		t.Errorf("finding = %+v, want line %d naming 8000 and 8192", f, i+1)
	}
}

// TestMinigoBackdatedRunStop checks that strict mode accepts MiniGo's
// back-dated run_stop in the real logs (run_stop is dated before the
// evaluations logged above it) and ties it to the winning generation.
func TestMinigoBackdatedRunStop(t *testing.T) {
	minigo, _ := realLogs(t)
	for _, p := range minigo {
		l := readLogText(t, p)
		stop := l.one("run_stop")
		acc := l.accuracyLines(0.5)
		if len(acc) == 0 || acc[0] > stop || l.timeMS(acc[0]) <= l.timeMS(stop) {
			t.Fatalf("%s: expected a passing eval_accuracy above run_stop and dated after it", p)
		}
		r := checkText(t, l.String(), Options{Strict: true})
		if !r.Compliant {
			t.Fatalf("%s: %+v", p, r.Findings)
		}
		// One generation fewer than the winning model needs must fail:
		// date run_stop just before the end of the generation before.
		epochStops := l.find("epoch_stop")
		m := regexp.MustCompile(`"epoch_num": (\d+)`).FindStringSubmatch(l.lines[acc[0]])
		win, _ := strconv.Atoi(m[1])
		prev := epochStops[win-2] // generation win-1, 1-based
		l.setTime(stop, l.timeMS(prev)-1)
		r = checkText(t, l.String(), Options{Strict: true})
		if r.Compliant || !hasRule(r, "strict/minigo_generation", SeverityError) {
			t.Errorf("%s: run_stop before generation %d ended accepted: %+v", p, win-1, r.Findings)
		}
		if d := checkText(t, l.String(), Options{}); !d.Compliant {
			t.Errorf("%s: default mode must not check the back-dating: %+v", p, d.Findings)
		}
	}
}

func TestBenchmarkOption(t *testing.T) {
	minigo, dlrm := realLogs(t)
	rep, err := VerifyFiles(context.Background(), []string{minigo[0], dlrm[0]}, Limits{}, Options{Benchmark: "minigo"})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Files[0].Compliant || rep.Files[1].Compliant || !hasRule(rep.Files[1], "options/benchmark", SeverityError) {
		t.Errorf("--benchmark minigo: %+v / %+v", rep.Files[0].Findings, rep.Files[1].Findings)
	}
	for _, opt := range []Options{{Benchmark: "bert"}, {Ruleset: "3.0.0"}} {
		if _, err := VerifyFiles(context.Background(), minigo[:1], Limits{}, opt); err == nil {
			t.Errorf("options %+v accepted", opt)
		}
	}
}

func TestVerifyFilesInputErrors(t *testing.T) {
	if _, err := VerifyFiles(context.Background(), nil, Limits{}, Options{}); !errors.Is(err, ErrNoLogs) {
		t.Errorf("no files: err = %v", err)
	}
	if _, err := Verify(nil, Options{}); !errors.Is(err, ErrNoLogs) {
		t.Errorf("no logs: err = %v", err)
	}
	_, dlrm := realLogs(t)
	dir := t.TempDir()
	for _, p := range []string{filepath.Join(dir, "missing.txt"), dir} {
		_, err := VerifyFiles(context.Background(), []string{dlrm[0], p}, Limits{}, Options{})
		var ie *InputError
		if !errors.As(err, &ie) || ie.Path != p || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err = %v, want an InputError naming it", p, err)
		}
	}
	// A log over the limits is non-compliant, not an input error.
	big := writeLog(t, dir, "long.txt", strings.Repeat("x", 2000)+"\n")
	rep, err := VerifyFiles(context.Background(), []string{big}, Limits{MaxLineBytes: 1000}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Compliant || !hasRule(rep.Files[0], "limit", SeverityError) || rep.Files[0].Findings[0].Line != 1 {
		t.Errorf("oversized line: %+v", rep.Files[0])
	}
}

func TestVerifyParsedLogs(t *testing.T) {
	minigo, dlrm := realLogs(t)
	var logs []*Log
	for _, p := range []string{minigo[0], minigo[1], dlrm[0]} {
		l, err := ParseFile(p, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	rep, err := Verify(logs, Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Compliant || len(rep.Files) != 3 || rep.Files[2].File != dlrm[0] || len(rep.Scores) != 2 {
		t.Fatalf("report %+v", rep)
	}
	for _, s := range rep.Scores {
		if s.Minutes != nil || !strings.Contains(s.Note, "olympic scoring needs") || s.MeanMinutes == nil {
			t.Errorf("incomplete set scored: %+v", s)
		}
	}
	if m := rep.Scores[1]; m.Benchmark != "minigo" || m.Runs != 2 || *m.MeanMinutes != (*rep.Files[0].Minutes+*rep.Files[1].Minutes)/2 {
		t.Errorf("minigo mean: %+v", m)
	}
}
