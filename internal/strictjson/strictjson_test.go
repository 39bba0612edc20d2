package strictjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type doc struct {
	Name string `json:"name"`
}

func TestDecode(t *testing.T) {
	var d doc
	if err := Decode([]byte(" {\"name\":\"a\"} \n"), &d); err != nil || d.Name != "a" {
		t.Fatalf("valid document: %v %+v", err, d)
	}
	for name, tc := range map[string]struct {
		in   string
		want string
	}{
		"unknown field":    {`{"name":"a","extra":1}`, `unknown field "extra"`},
		"second value":     {`{"name":"a"} {"name":"b"}`, ErrTrailing.Error()},
		"trailing garbage": {`{"name":"a"}x`, ErrTrailing.Error()},
		"trailing bracket": {`{"name":"a"}]`, ErrTrailing.Error()},
		"empty":            {``, "EOF"},
		"truncated":        {`{"name":`, "unexpected EOF"},
		"wrong type":       {`{"name":1}`, "cannot unmarshal"},
		"case variant":     {`{"Name":"a"}`, `key "Name" of the object at the top level differs only in case from the field "name"`},
	} {
		var d doc
		err := Decode([]byte(tc.in), &d)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, tc.want)
		}
		if strings.Contains(tc.want, "trailing") && !errors.Is(err, ErrTrailing) {
			t.Errorf("%s: %v is not ErrTrailing", name, err)
		}
	}
}

// sample is shaped like a line of a samples file.
type sample struct {
	TaskID   *string `json:"task_id"`
	Solution *string `json:"solution"`
	Tests    []struct {
		Input string `json:"input"`
	} `json:"tests"`
	Env map[string]string `json:"env"`
}

// TestExactNames covers what encoding/json reads differently from
// Python's json and EvalPlus: names matched ignoring case (with Unicode
// folding: the long s and the Kelvin sign), duplicate names (Python keeps
// the last, encoding/json too), and the bounds Python sets.
func TestExactNames(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
		key            string
		line           int
	}{
		{"case variant beside the field", `{"task_id":"HumanEval/0","solution":"A","SOLUTION":"B"}`,
			`keys "solution" and "SOLUTION" of the object at the top level differ only in case`, "SOLUTION", 1},
		{"case variant of the id", `{"task_id":"HumanEval/0","Task_ID":"HumanEval/1","solution":"A"}`,
			`keys "task_id" and "Task_ID"`, "Task_ID", 1},
		{"case variant alone", `{"task_id":"HumanEval/0","SOLUTION":"B"}`,
			`key "SOLUTION" of the object at the top level differs only in case from the field "solution"`, "SOLUTION", 1},
		{"long s", `{"task_id":"HumanEval/0","ſolution":"B"}`, `differs only in case from the field "solution"`, "ſolution", 1},
		{"kelvin sign", `{"task_id":"HumanEval/0","env":{"k":"1","\u212a":"2"}}`, "keys \"k\" and \"\u212a\" of the object at env differ only in case", "\u212a", 1},
		{"duplicate in data", `{"task_id":"x","meta":[{"a":1,"a":2}]}`, `key "a" appears twice in the object at meta[]`, "a", 1},
		{"variant in a list", "{\"task_id\":\"x\",\n\"tests\":[{\"input\":\"1\"},\n{\"INPUT\":\"2\"}]}",
			`line 3: key "INPUT" of the object at tests[] differs only in case from the field "input"`, "INPUT", 3},
		{"duplicate", "{\"task_id\":\"HumanEval/0\",\n\"solution\":\"A\",\n\"solution\":\"B\"}",
			`line 3: key "solution" appears twice in the object at the top level`, "solution", 3},
		{"duplicate in an extra member", `{"task_id":"x","solution":"A","meta":{"k":1,"k":2}}`, `key "k" appears twice in the object at meta`, "k", 1},
		{"map keys up to case", `{"env":{"PATH":"a","path":"b"}}`, `keys "PATH" and "path" of the object at env differ only in case`, "path", 1},
		{"deep", `{"meta":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + `}`, "more than 512 levels of nesting", "", 1},
		{"long integer", `{"meta":` + strings.Repeat("7", MaxIntDigits+1) + `}`, "an integer of 4301 digits at meta", "", 1},
		{"long negative integer", `{"meta":[-` + strings.Repeat("7", MaxIntDigits+1) + `]}`, "an integer of 4301 digits at meta[]", "", 1},
		{"lone surrogate", `{"solution":"\ud800"}`, "surrogate", "", 1},
		{"invalid UTF-8", "{\"solution\":\"\xff\"}", "invalid UTF-8", "", 1},
		{"NaN", `{"meta":NaN}`, "invalid character 'N'", "", 1},
		{"BOM", "\ufeff{}", "invalid character", "", 1},
	} {
		var s sample
		err := DecodeOpen([]byte(c.in), &s)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Key != c.key || e.Line != c.line {
			t.Errorf("%s: %#v, want key %q at line %d", c.name, err, c.key, c.line)
		}
	}
	// At the bounds, and extra members of any shape, are read.
	for _, in := range []string{
		`{"meta":` + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + `}`,
		`{"meta":` + strings.Repeat("7", MaxIntDigits) + `}`,
		`{"meta":1` + strings.Repeat("7", MaxIntDigits) + `.5e3}`,
		`{"task_id":"x","solution":"y","Extra":1,"raw_solution":"z","meta":{"k":[1,{"a":null}]}}`,
		`{"env":{"PATH":"a","HOME":"b"}}`,
		// Data the type leaves open may hold names that differ in case
		// (HumanEval/95's inputs do).
		`{"meta":{"first_name":"a","FIRST_NAME":"b"},"tests":[{"input":"1","Extra":{"x":1,"X":2}}]}`,
	} {
		var s sample
		if err := DecodeOpen([]byte(in), &s); err != nil {
			t.Errorf("%.60q: %v", in, err)
		}
	}
}

// wide has a field of each kind a repro record uses.
type wide struct {
	inner
	Name     string            `json:"name"`
	Count    int64             `json:"count,omitempty"`
	Ratio    float64           `json:"ratio"`
	Ok       *bool             `json:"ok"`
	Tags     []string          `json:"tags"`
	Fixed    [2]int            `json:"fixed"`
	Labels   map[string]string `json:"labels"`
	Any      any               `json:"any"`
	Raw      json.RawMessage   `json:"raw"`
	Took     time.Duration     `json:"took"`
	At       time.Time         `json:"at"`
	Children []*wide           `json:"children"`
	Ignored  string            `json:"-"`
	Untagged string
	hidden   string // not decoded: encoding/json and strictjson leave it
}

var _ = wide{hidden: ""}

type inner struct {
	Depth int `json:"depth"`
}

// FuzzDecodeAgreesWithEncodingJSON checks that whatever DecodeOpen
// accepts, encoding/json decodes to the same value: the decoder changes
// which texts are read, never what an accepted text means.
func FuzzDecodeAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","count":3,"ratio":0.5,"ok":true,"tags":["x"],"fixed":[1],"labels":{"a":"b"},"any":{"k":[1,"s",null]},"raw":{"z":1},"took":1000,"at":"2024-01-02T03:04:05Z","depth":2,"Untagged":"u"}`,
		`{"children":[{"name":"c","children":null}],"fixed":[1,2,3],"any":1e400}`,
		`{"name":null,"tags":null,"labels":{},"ok":null}`,
		`{"name":"\u00e9\ud83d\ude00","extra":[1,2],"Ignored":"x","hidden":"y"}`,
		`{"count":1.5}`,
		`{"count":"1"}`,
		`[]`,
		`null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got wide
		if DecodeOpen(b, &got) != nil {
			return
		}
		var want wide
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("DecodeOpen accepted %q, encoding/json: %v", b, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: DecodeOpen gives %+v, encoding/json %+v", b, got, want)
		}
		var closed wide
		if err := Decode(b, &closed); err == nil && !reflect.DeepEqual(closed, want) {
			t.Fatalf("%q: Decode gives %+v, encoding/json %+v", b, closed, want)
		}
	})
}

// FuzzDecodeRawAgreesWithEncodingJSON is the same check for the targets
// that are read in one pass (raw JSON, strings).
func FuzzDecodeRawAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{`[1, {"a": [2]}, "x"]`, `"s\u00e9"`, `[{"a":1,"a":2}]`, `[] x`, `null`, `["\ud800"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got, want []json.RawMessage
		if DecodeOpen(b, &got) == nil {
			if err := json.Unmarshal(b, &want); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: DecodeOpen gives %q, encoding/json %q (%v)", b, got, want, err)
			}
		}
		var gs, ws string
		if Decode(b, &gs) == nil {
			if err := json.Unmarshal(b, &ws); err != nil || gs != ws {
				t.Fatalf("%q: Decode gives %q, encoding/json %q (%v)", b, gs, ws, err)
			}
		}
	})
}
