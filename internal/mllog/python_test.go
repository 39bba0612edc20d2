package mllog

import (
	"math"
	"strconv"
	"testing"
)

// floatCases lists strings and what Python's float() makes of them
// ("ERR" for ValueError).
var floatCases = []struct {
	in   string
	want string
}{
	{"1652563493034", "1.652563493034e+12"},
	{" 1_652_563_493_034 ", "1.652563493034e+12"},
	{"1__0", "ERR"},
	{"_1", "ERR"},
	{"1_", "ERR"},
	{"1_.5", "ERR"},
	{"1.5_5", "1.55"},
	{"1e1_0", "1e+10"},
	{"0x10", "ERR"},
	{"1.", "1"},
	{".5", "0.5"},
	{"5.e3", "5000"},
	{".", "ERR"},
	{"", "ERR"},
	{"  ", "ERR"},
	{"1 2", "ERR"},
	{"+inf", "+Inf"},
	{"-Infinity", "-Inf"},
	{"iNfInItY", "+Inf"},
	{"nAn", "NaN"},
	{"-nan", "NaN"},
	{"infinit", "ERR"},
	{"1e", "ERR"},
	{"1e+", "ERR"},
	{"1e400", "+Inf"},
	{"1e-400", "0"},
	{"\u0661\u0662", "12"},
	{"\u00a012\u2003", "12"},
	{"\x1c7\x1f", "ERR"},
	{"\v7\f", "7"},
	{"\u00857\u3000", "7"},
	{"12\x00", "ERR"},
	{"１２", "12"}, // fullwidth digits
	{"soon", "ERR"},
}

func TestPyFloatString(t *testing.T) {
	for _, c := range floatCases {
		f, ok := pyFloatString(c.in)
		got := "ERR"
		if ok {
			got = strconv.FormatFloat(f, 'g', -1, 64)
			if math.IsInf(f, 1) {
				got = "+Inf"
			}
		}
		if got != c.want {
			t.Errorf("float(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestPyFloatStringAgreesWithPython(t *testing.T) {
	var inputs []string
	for _, c := range floatCases {
		// Hand the string to Python as JSON, as it would reach float().
		v := Value{kind: String, s: c.in}
		inputs = append(inputs, v.String())
	}
	got := pythonVerdicts(t, "float(json.loads(s))", inputs)
	for i, c := range floatCases {
		want := c.want
		if want != "ERR" {
			f, _ := pyFloatString(c.in)
			switch {
			case math.IsInf(f, 1):
				want = "inf"
			case math.IsInf(f, -1):
				want = "-inf"
			case math.IsNaN(f):
				want = "nan"
			default:
				want = strconv.FormatFloat(f, 'g', -1, 64)
			}
		}
		py := got[i]
		if py != "ERR" && want != "ERR" {
			pf, err := strconv.ParseFloat(py, 64)
			wf, _ := strconv.ParseFloat(want, 64)
			if err == nil && (pf == wf || math.IsNaN(pf) && math.IsNaN(wf)) {
				continue
			}
		}
		if py != want {
			t.Errorf("float(%q): python %s, repro %s", c.in, py, want)
		}
	}
}

func mustValue(t *testing.T, s string) Value {
	t.Helper()
	v, _, err := decodeJSON([]byte(s), 64)
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func TestPythonComparisons(t *testing.T) {
	ge := []struct {
		v      string
		c      float64
		want   bool
		typErr bool
	}{
		{"8192", 8192, true, false},
		{"8191", 8192, false, false},
		{"8192.0", 8192, true, false},
		{"true", 0.5, true, false},
		{"false", 0.5, false, false},
		{"NaN", 0.5, false, false},
		{"Infinity", 0.5, true, false},
		{"123456789012345678901234567890", 8192, true, false},
		{"-123456789012345678901234567890", 8192, false, false},
		{"9007199254740993", 9007199254740992, true, false},
		{`"9000"`, 8192, false, true},
		{"null", 8192, false, true},
		{"[9000]", 8192, false, true},
		{"{}", 8192, false, true},
	}
	for _, c := range ge {
		got, err := pyGE(mustValue(t, c.v), c.c)
		if got != c.want || (err != nil) != c.typErr {
			t.Errorf("%s >= %g = %v, %v", c.v, c.c, got, err)
		}
	}
	// 2**53+1 > 2**53 exactly, though both round to the same float64.
	if ok, _ := pyGT(mustValue(t, "9007199254740993"), 9007199254740992); !ok {
		t.Errorf("big int compared inexactly")
	}
	eq := []struct {
		a, b string
		want bool
	}{
		{"1", "1.0", true},
		{"1", "true", true},
		{"0", "false", true},
		{"NaN", "NaN", false},
		{`"a"`, `"a"`, true},
		{`"1"`, "1", false},
		{"null", "null", true},
		{"[1, [2]]", "[1.0, [2]]", true},
		{`{"a": 1, "b": 2}`, `{"b": 2, "a": 1}`, true},
		{`{"a": 1, "a": 2}`, `{"a": 2}`, true},
		{`{"a": 1}`, `{"a": 1, "b": 1}`, false},
		{"123456789012345678901234567890", "123456789012345678901234567891", false},
		{"123456789012345678901234567890", "1.2345678901234568e+29", false},
	}
	for _, c := range eq {
		if got := pyEqual(mustValue(t, c.a), mustValue(t, c.b)); got != c.want {
			t.Errorf("%s == %s = %v", c.a, c.b, got)
		}
	}
	if pyAllSame([]Value{mustValue(t, "NaN"), mustValue(t, "NaN")}) || !pyAllSame([]Value{mustValue(t, "NaN")}) {
		t.Errorf("all_same on NaN: a value matches only itself")
	}
	contains := []struct {
		c      string
		want   bool
		typErr bool
	}{
		{`{"status": "x"}`, true, false},
		{`{"state": "status"}`, false, false},
		{`["status"]`, true, false},
		{`"the status is"`, true, false},
		{`null`, false, true},
		{`5`, false, true},
	}
	for _, c := range contains {
		got, err := pyContains(mustValue(t, c.c), "status")
		if got != c.want || (err != nil) != c.typErr {
			t.Errorf("'status' in %s = %v, %v", c.c, got, err)
		}
	}
}
