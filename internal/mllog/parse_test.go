package mllog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sampleLine = `:::MLLOG {"namespace": "", "time_ms": 1664655486389, "event_type": "INTERVAL_START", "key": "run_start", "value": null, "metadata": {"file": "x.py", "lineno": 27}}`

func parseString(t *testing.T, s string) *Log {
	t.Helper()
	l, err := Parse(strings.NewReader(s), Limits{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return l
}

func TestParseLines(t *testing.T) {
	text := "launcher says hi\n" +
		"[1,0]<stdout>: 2022-10-01 " + sampleLine + "\n" +
		"\n" +
		"noise :::MLLOG {\"bad\" :::MLLOG " + strings.TrimPrefix(sampleLine, Marker) + "\xa0 \t\n" +
		"progress 10%\rprogress 20%\r" + sampleLine + "\r\n" +
		sampleLine // no final newline
	l := parseString(t, text)
	if l.Lines != 6 || len(l.Records) != 4 {
		t.Fatalf("lines %d records %d, want 6 and 4", l.Lines, len(l.Records))
	}
	wantLines := []int{2, 4, 5, 6}
	for i, r := range l.Records {
		if r.Problem != nil {
			t.Errorf("record %d: %v", i, r.Problem.Msg)
		}
		if r.Line != wantLines[i] || r.Index != i || r.Key != "run_start" || r.TimeMS != 1664655486389 || !r.Value.IsNull() {
			t.Errorf("record %d = %+v", i, r)
		}
		if r.EventType != "INTERVAL_START" {
			t.Errorf("record %d event type %q", i, r.EventType)
		}
	}
	if d := l.Records[1].Deviations; len(d) != 1 || !strings.Contains(d[0], "more than once") {
		t.Errorf("two markers on a line: deviations %q", d)
	}
	if len(l.Records[0].Deviations) != 0 {
		t.Errorf("well-formed record has deviations %q", l.Records[0].Deviations)
	}
	if file, _ := l.Records[0].Metadata.Get("file"); file.String() != `"x.py"` {
		t.Errorf("metadata file = %s", file)
	}
}

func TestParseProblems(t *testing.T) {
	cases := []struct {
		text string
		kind ProblemKind
	}{
		{`{"time_ms": 1, "key": "k", "value": 1, "metadata": {}`, ProblemSyntax},
		{`{"time_ms": 1, "key": "k", "value": 1, "metadata": {}} trailing`, ProblemSyntax},
		{`{"time_ms": "noon", "key": "k", "value": 1, "metadata": {}}`, ProblemTime},
		{`[1, 2]`, ProblemShape},
		{`"text"`, ProblemShape},
		{`{"key": "k", "value": 1, "metadata": {}}`, ProblemShape},
		{`{"time_ms": 1, "value": 1, "metadata": {}}`, ProblemShape},
		{`{"time_ms": 1, "key": "k", "metadata": {}}`, ProblemShape},
		{`{"time_ms": 1, "key": "k", "value": 1}`, ProblemShape},
		{`{"time_ms": null, "key": "k", "value": 1, "metadata": {}}`, ProblemShape},
		{`{"time_ms": [1], "key": "k", "value": 1, "metadata": {}}`, ProblemShape},
		{`{"time_ms": 1` + strings.Repeat("0", 400) + `, "key": "k", "value": 1, "metadata": {}}`, ProblemShape},
		{`{"time_ms": 1` + strings.Repeat("0", 4300) + `, "key": "k", "value": 1, "metadata": {}}`, ProblemSyntax},
	}
	for _, c := range cases {
		l := parseString(t, Marker+c.text+"\n")
		if len(l.Records) != 1 || l.Records[0].Problem == nil || l.Records[0].Problem.Kind != c.kind {
			t.Errorf("%.60s: records %+v, want a %v problem", c.text, l.Records, c.kind)
		}
	}
}

func TestParseDeviations(t *testing.T) {
	cases := []struct {
		text, want string
	}{
		{`{"namespace": "", "time_ms": 1.5, "event_type": "POINT_IN_TIME", "key": "k", "value": 1, "metadata": {}}`, "time_ms is not an integer but a float"},
		{`{"namespace": "", "time_ms": true, "event_type": "POINT_IN_TIME", "key": "k", "value": 1, "metadata": {}}`, "time_ms is not an integer but a bool"},
		{`{"time_ms": 1, "event_type": "POINT_IN_TIME", "key": "k", "value": 1, "metadata": {}}`, "namespace is missing"},
		{`{"namespace": "", "time_ms": 1, "event_type": "POINT", "key": "k", "value": 1, "metadata": {}}`, "event_type \"POINT\""},
		{`{"namespace": "", "time_ms": 1, "key": "k", "value": 1, "metadata": {}}`, "event_type is missing"},
		{`{"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": 5, "value": 1, "metadata": {}}`, "key is not a string but an int"},
		{`{"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "k", "value": 1, "metadata": []}`, "metadata is not an object but an array"},
		{`{"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "k", "value": 1, "metadata": {}, "extra": 1}`, `unexpected field "extra"`},
		{`{"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "k", "value": NaN, "metadata": {}}`, "NaN or Infinity"},
		{`{"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "k", "key": "k", "value": 1, "metadata": {}}`, "repeats a member"},
	}
	for _, c := range cases {
		l := parseString(t, Marker+c.text)
		r := l.Records[0]
		if r.Problem != nil || len(r.Deviations) != 1 || !strings.Contains(r.Deviations[0], c.want) {
			t.Errorf("%.70s: problem %v deviations %q, want one containing %q", c.text, r.Problem, r.Deviations, c.want)
		}
	}
}

func TestParseLimits(t *testing.T) {
	line := sampleLine + "\n"
	var le *LimitError

	_, err := Parse(strings.NewReader(line+line+strings.Repeat("x", 300)+"\n"+line), Limits{MaxLineBytes: 299})
	if !errors.As(err, &le) || le.Line != 3 || le.What != "line length" || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("long line: %v", err)
	}
	if _, err := Parse(strings.NewReader(strings.Repeat("x", 300)), Limits{MaxLineBytes: 300}); err != nil {
		t.Errorf("line of exactly the limit: %v", err)
	}
	_, err = Parse(strings.NewReader(strings.Repeat(line, 3)), Limits{MaxRecords: 2})
	if !errors.As(err, &le) || le.Line != 3 || le.What != "record count" {
		t.Errorf("too many records: %v", err)
	}
	if _, err := Parse(strings.NewReader(strings.Repeat(line, 2)), Limits{MaxRecords: 2}); err != nil {
		t.Errorf("records at the limit: %v", err)
	}
	_, err = Parse(strings.NewReader(strings.Repeat(line, 3)), Limits{MaxBytes: int64(2*len(line) + 1)})
	if !errors.As(err, &le) || le.What != "file size" {
		t.Errorf("too many bytes: %v", err)
	}
	if _, err := Parse(strings.NewReader(strings.Repeat(line, 3)), Limits{MaxBytes: int64(3 * len(line))}); err != nil {
		t.Errorf("bytes at the limit: %v", err)
	}
	deep := Marker + `{"time_ms": 1, "key": "k", "metadata": {}, "value": ` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "}"
	l, err := Parse(strings.NewReader(deep), Limits{MaxDepth: 20})
	if err != nil || l.Records[0].Problem == nil || l.Records[0].Problem.Kind != ProblemSyntax {
		t.Errorf("deep record: %v %+v", err, l)
	}

	dir := t.TempDir()
	p := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(p, []byte(strings.Repeat(line, 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ParseFile(p, Limits{MaxBytes: 100})
	if !errors.As(err, &le) || le.Name != p || !strings.Contains(err.Error(), p) {
		t.Errorf("ParseFile over size: %v", err)
	}
	_, err = ParseFile(p, Limits{MaxLineBytes: 10})
	if !errors.As(err, &le) || !strings.Contains(err.Error(), p+": line 1:") {
		t.Errorf("ParseFile long line: %v", err)
	}
	if _, err := ParseFile(dir, Limits{}); err == nil {
		t.Errorf("ParseFile on a directory succeeded")
	}
	l, err = ParseFile(p, Limits{})
	if err != nil || l.Name != p || len(l.Records) != 10 {
		t.Errorf("ParseFile: %v %v", err, l)
	}
}
