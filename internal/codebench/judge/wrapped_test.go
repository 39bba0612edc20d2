package judge

import (
	"testing"

	"github.com/reprolab/repro/internal/codebench/judge/judgetest"
)

var wrapv = judgetest.Wrapped

// TestWrappedEquality checks Equal on 'Y' values against what CPython 3.11
// (with numpy 1.24 for the numpy rows) answers for the Python expression.
func TestWrappedEquality(t *testing.T) {
	od := wrapv('b', "OrderedDict", dictv(strv("a"), intv(1)))
	keys := wrapv('v', "dict_keys", listv(intv(1), intv(2)))
	items := wrapv('v', "dict_items", listv(tuplev(intv(1), strv("x"))))
	gen := wrapv('i', "generator", listv(intv(1)))
	for _, c := range []struct {
		py   string
		a, b v
		eq   bool
	}{
		{"OrderedDict(a=1) == {'a': 1}", od, dictv(strv("a"), intv(1)), true},
		{"OrderedDict(a=1) == {'a': 2}", od, dictv(strv("a"), intv(2)), false},
		{"P(1, 2) == (1, 2)", wrapv('b', "P", tuplev(intv(1), intv(2))), tuplev(intv(1), intv(2)), true},
		{"P(1, 2) == [1, 2]", wrapv('b', "P", tuplev(intv(1), intv(2))), listv(intv(1), intv(2)), false},
		{"numpy.float64(1.5) == 1.5", wrapv('b', "numpy.float64", floatv(1.5)), floatv(1.5), true},
		{"numpy.int64(3) == 3.0", wrapv('b', "numpy.int64", intv(3)), floatv(3), true},
		{"[numpy.int64(3)] == [3]", listv(wrapv('b', "numpy.int64", intv(3))), listv(intv(3)), true},
		{"{numpy.int64(3): 1} == {3: 1}", dictv(wrapv('b', "numpy.int64", intv(3)), intv(1)), dictv(intv(3), intv(1)), true},
		{"{1: 2}.keys() == {1, 2}... (keys of {1:0, 2:0})", keys, setv(intv(2), intv(1)), true},
		{"{1: 0, 2: 0}.keys() == frozenset({1})", keys, frozensetv(intv(1)), false},
		{"{1: 0, 2: 0}.keys() == [1, 2]", keys, listv(intv(1), intv(2)), false},
		{"{1: 'x'}.items() == {(1, 'x')}", items, setv(tuplev(intv(1), strv("x"))), true},
		{"(x for x in [1]) == [1]", gen, listv(intv(1)), false},
		{"g == g across processes", gen, gen, false},
	} {
		a, b := mustParse(t, c.a), mustParse(t, c.b)
		if got := Equal(a, b); got != c.eq {
			t.Errorf("%s: Equal = %v, want %v", c.py, got, c.eq)
		}
		if got := Equal(b, a); got != c.eq {
			t.Errorf("%s (swapped): Equal = %v, want %v", c.py, got, c.eq)
		}
	}
}

// TestWrappedInOracles: set(out) iterates iterators and views; a tolerance
// needs type(out) == type(exp), which a subclass or a numpy scalar is not.
func TestWrappedInOracles(t *testing.T) {
	steps := []oracleStep{
		{wrapv('i', "filter", listv(strv("ab"), strv("cd"))), listv(strv("cd"), strv("ab")), true},
		{wrapv('v', "dict_keys", listv(intv(4), intv(5))), tuplev(intv(5), intv(4)), true},
		{wrapv('i', "generator", listv(intv(4), intv(4))), listv(intv(4)), true},
		{wrapv('i', "generator", listv(intv(4), intv(6))), listv(intv(4)), false},
		{wrapv('i', "map", listv(listv(intv(1)))), listv(tuplev(intv(1))), false}, // unhashable list
	}
	runMBPPOracle(t, "similar_elements", 0, "[[1], [2]]", steps)
	// HumanEval/4 (atol 1e-6): numpy.float64 passes when equal, fails when only close.
	o := heOracle(1e-6, "mean_absolute_deviation")
	np := func(f float64) Value { return mustParse(t, wrapv('b', "numpy.float64", floatv(f))) }
	if ok, why := o.Check([]byte("[[1.0]]"), np(0.5), mustParse(t, floatv(0.5))); !ok {
		t.Errorf("equal numpy.float64 fails: %s", why)
	}
	if ok, _ := o.Check([]byte("[[1.0]]"), np(0.5000001), mustParse(t, floatv(0.5))); ok {
		t.Error("a numpy.float64 within atol passes; EvalPlus asserts type(out) == type(exp)")
	}
	// A list holding numpy scalars is a list: the tolerance applies.
	if ok, why := o.Check([]byte("[[1.0]]"), mustParse(t, listv(wrapv('b', "numpy.float64", floatv(0.5000001)))), mustParse(t, listv(floatv(0.5)))); !ok {
		t.Errorf("a list of close numpy.float64 fails: %s", why)
	}
	// find_zero takes any real number.
	fz := heOracle(1e-4, "find_zero")
	if ok, why := fz.Check([]byte("[[-1.0, 1.0]]"), np(1), mustParse(t, floatv(1))); !ok {
		t.Errorf("find_zero with numpy.float64: %s", why)
	}
}

func TestWrappedRejects(t *testing.T) {
	for name, b := range map[string]v{
		"bad mode":           wrapv('q', "x", intv(1)),
		"iterator of an int": wrapv('i', "generator", intv(1)),
		"wrapped other":      wrapv('b', "x", otherv("y")),
		"wrapped wrapped":    wrapv('b', "x", wrapv('b', "y", intv(1))),
		"truncated":          wrapv('b', "abc", nil),
		"no name":            {'Y', 'b', 0, 0},
	} {
		if _, err := ParseValue(b, DefaultBounds); err == nil {
			t.Errorf("%s: accepted %x", name, []byte(b))
		}
	}
}
