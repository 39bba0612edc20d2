package reproduce

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/strictjson"
)

const honestResults = `{"date":"2026-12-05 01:00","hash":"h1","eval":{
"HumanEval/0":[{"task_id":"HumanEval/0","solution":"a","base_status":"pass","plus_status":"pass","base_fail_tests":[],"plus_fail_tests":[]},
               {"task_id":"HumanEval/0","solution":"b","base_status":"fail","plus_status":"fail","base_fail_tests":[[1]],"plus_fail_tests":[]}],
"HumanEval/2":[{"task_id":"HumanEval/2","solution":"c","base_status":"pass","plus_status":"timeout","base_fail_tests":[],"plus_fail_tests":[],
                "plus_elapsed":9.5,"plus_limit":9.0,"plus_near_limit":{"status":"timeout","input":-1,"cpu":9.2,"limit":9.0}}]},
"pass_at_k":{"base":{"pass@1":0.6}}}`

func mustParse(t *testing.T, s string) *Results {
	t.Helper()
	rf, err := ParseResults(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return rf
}

func TestCompareAgrees(t *testing.T) {
	c := Compare(mustParse(t, honestResults), mustParse(t, honestResults))
	if !c.Agrees() || c.Verdicts != 6 || c.Agree != 6 || len(c.Agreements) != 6 || len(c.Differences) != 0 {
		t.Fatalf("identical results: %+v", c)
	}
	if got := c.Tally(); got != "6 of 6 verdicts agree" {
		t.Errorf("tally %q", got)
	}
}

// TestCompareForged: each way a results file can claim what its samples
// do not earn is a difference, and a time-limit case keeps both sides'
// measurements.
func TestCompareForged(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		want           string // in the first difference's String
		differences    int
	}{
		{"a failing sample claims a pass", `"solution":"b","base_status":"fail","plus_status":"fail"`, `"solution":"b","base_status":"pass","plus_status":"pass"`,
			"HumanEval/0 #1 base: submitted pass, re-executed fail", 2},
		{"a timeout claims a pass", `"plus_status":"timeout"`, `"plus_status":"pass"`,
			"HumanEval/2 #0 plus: submitted pass (9.20 s CPU of a 9.00 s limit), re-executed timeout (9.20 s CPU of a 9.00 s limit)", 1},
		{"a results file of another program", `"solution":"a"`, `"solution":"a2"`, "another program", 2},
		{"a sample left out", `{"task_id":"HumanEval/2","solution":"c","base_status":"pass","plus_status":"timeout","base_fail_tests":[],"plus_fail_tests":[],
                "plus_elapsed":9.5,"plus_limit":9.0,"plus_near_limit":{"status":"timeout","input":-1,"cpu":9.2,"limit":9.0}}`, ``,
			"HumanEval/2 #0 base: submitted no verdict, re-executed pass", 2},
		{"plus never scored", `"solution":"c","base_status":"pass","plus_status":"timeout"`, `"solution":"c","base_status":"pass","plus_status":null`,
			"HumanEval/2 #0 plus: submitted no verdict, re-executed timeout", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forged := strings.Replace(honestResults, tc.from, tc.to, 1)
			if forged == honestResults {
				t.Fatal("the edit changed nothing")
			}
			c := Compare(mustParse(t, forged), mustParse(t, honestResults))
			if c.Agrees() || len(c.Differences) != tc.differences || c.Agree+len(c.Differences) != c.Verdicts {
				t.Fatalf("forged results: %+v", c)
			}
			if got := c.Differences[0].String(); !strings.Contains(got, tc.want) {
				t.Errorf("difference %q, want %q in it", got, tc.want)
			}
		})
	}
	other := strings.Replace(honestResults, `"hash":"h1"`, `"hash":"h2"`, 1)
	if c := Compare(mustParse(t, other), mustParse(t, honestResults)); c.Agrees() || !strings.Contains(c.Tally(), "dataset hash") {
		t.Errorf("another dataset: %+v", c)
	}
	if c := Compare(mustParse(t, `{"eval":{}}`), mustParse(t, `{"eval":{}}`)); c.Agrees() {
		t.Errorf("no verdicts at all agree: %+v", c)
	}
}

func TestParseResultsRefuses(t *testing.T) {
	for _, bad := range []string{
		``, `[]`, `{"hash":"h"}`,
		`{"eval":{"HumanEval/0":[{"task_id":"HumanEval/1","solution":"a","base_status":"pass"}]}}`,
		`{"eval":{},"eval":{}}`,
		`{"Eval":{}}`, `{"eval":null}`, `{"hash":"h","eval":{}} x`,
	} {
		if _, err := ParseResults(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseResults(%q) accepted it", bad)
		}
	}
}

// checkParse fails t unless ParseResults's answer on b (rs, err) is that
// of the file decoded whole: accepted where strictjson.DecodeOpen accepts
// it with an "eval" object whose entries each name their task, and then
// the same samples.
func checkParse(t *testing.T, b []byte, rs *Results, err error) {
	t.Helper()
	var rf codebench.ResultsFile
	werr := strictjson.DecodeOpen(b, &rf)
	if werr == nil && rf.Eval == nil {
		werr = errors.New("no eval")
	}
	for id, es := range rf.Eval {
		for _, e := range es {
			if werr == nil && e.TaskID != id {
				werr = errors.New("an entry of another task")
			}
		}
	}
	if (werr == nil) != (err == nil) {
		t.Fatalf("%.200q: read whole: %v; ParseResults: %v", b, werr, err)
	}
	if err != nil {
		return
	}
	if rs.Hash != rf.Hash || len(rs.Eval) != len(rf.Eval) {
		t.Fatalf("%.200q: ParseResults: hash %q, %d tasks; whole: %q, %d", b, rs.Hash, len(rs.Eval), rf.Hash, len(rf.Eval))
	}
	for id, es := range rf.Eval {
		got := rs.Eval[id]
		if len(got) != len(es) {
			t.Fatalf("%.200q: task %s: %d samples, whole %d", b, id, len(got), len(es))
		}
		for i := range es {
			if want := sampleOf(&es[i]); !reflect.DeepEqual(got[i], want) {
				t.Fatalf("%.200q: task %s sample %d: %+v, whole %+v", b, id, i, got[i], want)
			}
		}
	}
}

// TestParseResultsReadsAsWhole: ParseResults, reading entry by entry,
// accepts what the whole file's decoding accepts, with the same samples.
func TestParseResultsReadsAsWhole(t *testing.T) {
	cases := []string{honestResults, `{"eval":{}}`, `{"eval":null}`, `{}`, `{"hash":"h","eval":{"HumanEval/0":null}}`,
		`{"eval":{"HumanEval/0":[{"task_id":"HumanEval/1","solution":"a","base_status":"pass"}]}}`,
		strings.Replace(honestResults, `"plus_status":"timeout"`, `"plus_status":null`, 1),
		strings.Replace(honestResults, `"solution":"b"`, `"Solution":"b"`, 1),
		strings.Replace(honestResults, `"HumanEval/2":[`, `"HumanEval/2":[null,`, 1),
	}
	accepted := 0
	for _, c := range cases {
		rs, err := ParseResults(strings.NewReader(c))
		checkParse(t, []byte(c), rs, err)
		if err == nil {
			accepted++
		}
	}
	if accepted < 3 || accepted > len(cases)-3 {
		t.Errorf("%d of %d cases accepted", accepted, len(cases))
	}
}

// FuzzCompare: whatever two results files say, the tally adds up and an
// agreement has no differences.
func FuzzCompare(f *testing.F) {
	f.Add([]byte(honestResults), []byte(strings.Replace(honestResults, `"base_status":"fail"`, `"base_status":"pass"`, 1)))
	f.Add([]byte(`{"eval":{}}`), []byte(honestResults))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ra, err := ParseResults(bytes.NewReader(a))
		checkParse(t, a, ra, err)
		if err != nil {
			return
		}
		rb, err := ParseResults(bytes.NewReader(b))
		checkParse(t, b, rb, err)
		if err != nil {
			return
		}
		c := Compare(ra, rb)
		if c.Agree+len(c.Differences) != c.Verdicts || c.Agree != len(c.Agreements) {
			t.Fatalf("tally does not add up: %+v", c)
		}
		if c.Agrees() && len(c.Differences) > 0 {
			t.Fatalf("agrees with differences: %+v", c)
		}
		for _, d := range c.Differences {
			_ = d.String()
		}
	})
}

// TestCompareNamesTheClocks: a time-limit difference between results files
// that record base_clocks shows each side's CPU on the job clock against
// its limit, and which run decided.
func TestCompareNamesTheClocks(t *testing.T) {
	const file = `{"date":"2026-12-05 01:00","hash":"h1","eval":{
"HumanEval/3":[{"task_id":"HumanEval/3","solution":"d","base_status":"STATUS","plus_status":null,"base_fail_tests":[],"plus_fail_tests":[],
                "base_clocks":{"run":"RUN","job_cpu_s":CPU,"load_cpu_s":0.1,"cpu_limit_s":4,"wall_s":5}}]}}`
	sub := mustParse(t, strings.NewReplacer("STATUS", "pass", "RUN", "first", "CPU", "3.5").Replace(file))
	re := mustParse(t, strings.NewReplacer("STATUS", "timeout", "RUN", "recheck", "CPU", "4").Replace(file))
	c := Compare(sub, re)
	want := "HumanEval/3 #0 base: submitted pass (3.50 s CPU of a 4.00 s limit, first run), re-executed timeout (4.00 s CPU of a 4.00 s limit, recheck run)"
	if len(c.Differences) != 1 || c.Differences[0].String() != want {
		t.Fatalf("differences %+v; want %q", c.Differences, want)
	}
	if c.Differences[0].Reexecuted.Clocks == nil || c.Differences[0].Reexecuted.Clocks.JobCPU != 4 {
		t.Errorf("the re-execution's clocks are not kept: %+v", c.Differences[0].Reexecuted)
	}
}
