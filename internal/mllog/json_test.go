package mllog

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"os/exec"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/testenv"
)

// jsonCases lists JSON texts with the verdict of Python's json.loads and,
// when accepted, our compact rendering of the value.
var jsonCases = []struct {
	in   string
	ok   bool
	want string
}{
	{`{"a": 1}`, true, `{"a":1}`},
	{` [1, 2.5, "x", null, true, false] `, true, `[1,2.5,"x",null,true,false]`},
	{`NaN`, true, `NaN`},
	{`Infinity`, true, `Infinity`},
	{`-Infinity`, true, `-Infinity`},
	{`-NaN`, false, ``},
	{`+1`, false, ``},
	{`01`, false, ``},
	{`1.`, false, ``},
	{`.5`, false, ``},
	{`1e5`, true, `100000.0`},
	{`1E+2`, true, `100.0`},
	{`1e`, false, ``},
	{`1e-5`, true, `1e-05`},
	{`-1.0e16`, true, `-1e+16`},
	{`0.0001`, true, `0.0001`},
	{`-0.0`, true, `-0.0`},
	{`-0`, true, `0`},
	{`-`, false, ``},
	{`1e400`, true, `Infinity`},
	{`123456789012345678901234567890`, true, `123456789012345678901234567890`},
	{`-9223372036854775809`, true, `-9223372036854775809`},
	{strings.Repeat("7", 4300), true, strings.Repeat("7", 4300)},
	{strings.Repeat("7", 4301), false, ``},
	{`"\ud800"`, true, `"\ud800"`},
	{`"\ud83d\ude00"`, true, `"\ud83d\ude00"`},
	{`"\u00e9\n\/"`, true, `"\u00e9\u000a/"`},
	{"\"\xe9\"", true, `"\u00e9"`},
	{"\"a\tb\"", false, ``},
	{"\"a\x7fb\"", true, `"a\u007fb"`},
	{`"\x"`, false, ``},
	{`"\u12"`, false, ``},
	{`"abc`, false, ``},
	{`[1,]`, false, ``},
	{`{"a":1,}`, false, ``},
	{`{"a" 1}`, false, ``},
	{`{a:1}`, false, ``},
	{`[1] x`, false, ``},
	{`{"a":1,"a":2}`, true, `{"a":1,"a":2}`},
	{`nul`, false, ``},
	{`tru`, false, ``},
	{``, false, ``},
	{`""`, true, `""`},
	{"\t\n\r 5 \n", true, `5`},
	{"\v5", false, ``},
}

func TestDecodeJSON(t *testing.T) {
	for _, c := range jsonCases {
		v, d, err := decodeJSON([]byte(c.in), 512)
		if (err == nil) != c.ok {
			t.Errorf("decode %.40q: err = %v, want ok=%v", c.in, err, c.ok)
			continue
		}
		if err == nil && v.String() != c.want {
			t.Errorf("decode %.40q = %s, want %s", c.in, v.String(), c.want)
		}
		if err == nil {
			if nf := strings.Contains(c.in, "NaN") || strings.Contains(c.in, "Infinity"); nf != d.nonFinite {
				t.Errorf("decode %q: nonFinite = %v", c.in, d.nonFinite)
			}
		}
	}
	v, d, err := decodeJSON([]byte(`{"a":1,"a":2}`), 512)
	if a, _ := v.Get("a"); err != nil || !d.duplicates || a.String() != "2" {
		t.Errorf("duplicate member: last must win and be flagged: %v %v %v", a, d.duplicates, err)
	}
	deep := strings.Repeat("[", 600) + strings.Repeat("]", 600)
	if _, _, err := decodeJSON([]byte(deep), 512); err == nil || !strings.Contains(err.Error(), "nesting") {
		t.Errorf("600 levels with limit 512: err = %v", err)
	}
	if _, _, err := decodeJSON([]byte(deep), 600); err != nil {
		t.Errorf("600 levels with limit 600: %v", err)
	}
	raw, _, _ := decodeJSON([]byte("\"\xe9\""), 8)
	esc, _, _ := decodeJSON([]byte(`"\u00e9"`), 8)
	utf, _, _ := decodeJSON([]byte("\"\xc3\xa9\""), 8)
	if !pyEqual(raw, esc) || pyEqual(raw, utf) {
		t.Errorf("latin-1 reading: raw é must equal \\u00e9 and differ from UTF-8 é")
	}
	lo, _, _ := decodeJSON([]byte(`"\ud800"`), 8)
	hi, _, _ := decodeJSON([]byte(`"\udbff"`), 8)
	if pyEqual(lo, hi) {
		t.Errorf("distinct lone surrogates compare equal")
	}
}

// requirePython returns /usr/bin/python3 for differential tests.
func requirePython(t *testing.T) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import json").Run(); err != nil {
		testenv.Missing(t, "/usr/bin/python3", "apt-get install python3")
	}
	return py
}

// pythonVerdicts runs a Python expression over each input (bytes decoded
// as latin-1, as the upstream checker reads logs) and returns the repr of
// the result, or "ERR" when it raised ValueError.
func pythonVerdicts(t *testing.T, expr string, inputs []string) []string {
	t.Helper()
	py := requirePython(t)
	var enc []string
	for _, in := range inputs {
		enc = append(enc, base64.StdEncoding.EncodeToString([]byte(in)))
	}
	script := `
import base64, json, sys
for line in sys.stdin:
    s = base64.b64decode(line.strip()).decode('latin-1')
    try:
        print(repr(` + expr + `).encode('unicode_escape').decode('ascii'))
    except (ValueError, RecursionError):
        print('ERR')
`
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = strings.NewReader(strings.Join(enc, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(got) != len(inputs) {
		t.Fatalf("python gave %d answers for %d inputs", len(got), len(inputs))
	}
	return got
}

func TestDecodeJSONAgreesWithPython(t *testing.T) {
	var inputs []string
	for _, c := range jsonCases {
		inputs = append(inputs, c.in)
	}
	got := pythonVerdicts(t, "json.loads(s)", inputs)
	for i, c := range jsonCases {
		if (got[i] != "ERR") != c.ok {
			t.Errorf("json.loads(%.40q): python %s, table says ok=%v", c.in, got[i], c.ok)
		}
	}
}

func TestValueMarshalJSON(t *testing.T) {
	for _, c := range jsonCases {
		v, d, err := decodeJSON([]byte(c.in), 512)
		if err != nil {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil || !json.Valid(b) {
			t.Errorf("marshal %q: %s %v", c.in, b, err)
			continue
		}
		if bytes.ContainsFunc(b, func(r rune) bool { return r >= 0x80 }) {
			t.Errorf("marshal %q is not ASCII: %s", c.in, b)
		}
		if d.nonFinite || hasNonFinite(v) {
			continue
		}
		back, _, err := decodeJSON(b, 512)
		if err != nil || !pyEqual(v, back) {
			t.Errorf("round trip %q -> %s -> %v (%v)", c.in, b, back, err)
		}
	}
	f, _, _ := decodeJSON([]byte(`[NaN, -Infinity]`), 8)
	if b, _ := json.Marshal(f); string(b) != `["NaN","-Infinity"]` {
		t.Errorf("non-finite marshal = %s", b)
	}
	if x, _ := f.Index(0).Float64(); !math.IsNaN(x) {
		t.Errorf("NaN decoded as %v", x)
	}
}

func hasNonFinite(v Value) bool {
	switch v.Kind() {
	case Float:
		f, _ := v.Float64()
		return math.IsNaN(f) || math.IsInf(f, 0)
	case Array:
		for i := 0; i < v.Len(); i++ {
			if hasNonFinite(v.Index(i)) {
				return true
			}
		}
	case Object:
		for _, m := range v.Members() {
			if hasNonFinite(m.Value) {
				return true
			}
		}
	}
	return false
}
