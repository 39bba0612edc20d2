package mllog

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/testenv"
)

// realLogs returns the paths of the ten MiniGo and five DLRM logs.
func realLogs(t testing.TB) (minigo, dlrm []string) {
	t.Helper()
	dir := testenv.MLPerfLogsDir(t)
	minigo, _ = filepath.Glob(filepath.Join(dir, "dgxa100_ngc22.09_tensorflow", "minigo", "result_*.txt"))
	dlrm, _ = filepath.Glob(filepath.Join(dir, "dgxa100_ngc22.04_merlin_hugectr", "dlrm", "result_*.txt"))
	sort.Strings(minigo)
	sort.Strings(dlrm)
	if len(minigo) != 10 || len(dlrm) != 5 {
		t.Fatalf("expected 10 MiniGo and 5 DLRM logs under %s, found %d and %d", dir, len(minigo), len(dlrm))
	}
	return minigo, dlrm
}

// logText is a log as lines, for deriving broken logs from real ones.
type logText struct {
	t     testing.TB
	lines []string
}

func readLogText(t testing.TB, path string) *logText {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return &logText{t: t, lines: strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")}
}

func (l *logText) clone() *logText {
	return &logText{t: l.t, lines: append([]string(nil), l.lines...)}
}

func (l *logText) String() string { return strings.Join(l.lines, "\n") + "\n" }

// keyOf returns the key of an MLLOG line, "" for other lines.
var keyRE = regexp.MustCompile(`"key": "([^"]*)"`)

func keyOf(line string) string {
	if !strings.Contains(line, Marker) {
		return ""
	}
	m := keyRE.FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	return m[1]
}

// find returns the indexes of the lines with the key.
func (l *logText) find(key string) []int {
	var out []int
	for i, s := range l.lines {
		if keyOf(s) == key {
			out = append(out, i)
		}
	}
	return out
}

// one returns the index of the only line with the key.
func (l *logText) one(key string) int {
	l.t.Helper()
	idx := l.find(key)
	if len(idx) != 1 {
		l.t.Fatalf("expected one %s line, found %d", key, len(idx))
	}
	return idx[0]
}

func (l *logText) remove(i int) { l.lines = append(l.lines[:i], l.lines[i+1:]...) }

func (l *logText) insert(i int, s string) {
	l.lines = append(l.lines[:i], append([]string{s}, l.lines[i:]...)...)
}

// move moves line from to position to (in the list without it).
func (l *logText) move(from, to int) {
	s := l.lines[from]
	l.remove(from)
	l.insert(to, s)
}

var (
	valueRE = regexp.MustCompile(`"value": (null|true|false|-?[0-9][0-9.eE+-]*|"[^"]*")`)
	timeRE  = regexp.MustCompile(`"time_ms": (-?[0-9]+)`)
)

// setValue replaces the scalar value of line i with the JSON text v.
func (l *logText) setValue(i int, v string) {
	l.t.Helper()
	if !valueRE.MatchString(l.lines[i]) {
		l.t.Fatalf("line %d has no scalar value: %s", i, l.lines[i])
	}
	l.lines[i] = valueRE.ReplaceAllLiteralString(l.lines[i], `"value": `+v)
}

// timeMS returns the time_ms of line i.
func (l *logText) timeMS(i int) int64 {
	l.t.Helper()
	m := timeRE.FindStringSubmatch(l.lines[i])
	if m == nil {
		l.t.Fatalf("line %d has no integer time_ms: %s", i, l.lines[i])
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		l.t.Fatal(err)
	}
	return n
}

// setTime replaces the time_ms of line i.
func (l *logText) setTime(i int, ms int64) {
	l.t.Helper()
	l.timeMS(i)
	l.lines[i] = timeRE.ReplaceAllLiteralString(l.lines[i], `"time_ms": `+strconv.FormatInt(ms, 10))
}

// replace replaces old by new in line i, which must contain it.
func (l *logText) replace(i int, old, new string) {
	l.t.Helper()
	if !strings.Contains(l.lines[i], old) {
		l.t.Fatalf("line %d does not contain %q: %s", i, old, l.lines[i])
	}
	l.lines[i] = strings.Replace(l.lines[i], old, new, 1)
}

// writeLog writes text to a file in a fresh directory and returns its path.
func writeLog(t testing.TB, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkText parses and checks a log held in memory.
func checkText(t testing.TB, text string, opt Options) *Result {
	t.Helper()
	l, err := Parse(strings.NewReader(text), Limits{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	r, err := Check(l, opt)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return r
}

// hasRule reports whether the result has a finding of the rule with the
// severity.
func hasRule(r *Result, rule string, sev Severity) bool {
	for _, f := range r.Findings {
		if f.Rule == rule && f.Severity == sev {
			return true
		}
	}
	return false
}
