package humaneval

import (
	"math"
	"math/big"
	"strings"
	"testing"
)

// equalityCase is one row of the table of Python equality: py is the
// expression as Python source (TestEqualityTableInPython evaluates it in
// the sandbox's CPython), a and b are the same values built here, eq is
// the result, checked by hand against CPython 3.11.
type equalityCase struct {
	py   string
	a, b v
	eq   bool
}

func bigFromString(s string) *big.Int {
	x, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return x
}

var long = strings.Repeat("ab", HashThreshold)

func equalityTable() []equalityCase {
	two53 := int64(1) << 53
	return []equalityCase{
		// numbers across types
		{"1 == True", intv(1), boolv(true), true},
		{"0 == False", intv(0), boolv(false), true},
		{"2 == True", intv(2), boolv(true), false},
		{"1 == 1.0", intv(1), floatv(1), true},
		{"True == 1.0", boolv(true), floatv(1), true},
		{"1 == 1.5", intv(1), floatv(1.5), false},
		{"0 == -0.0", intv(0), floatv(math.Copysign(0, -1)), true},
		{"0.0 == -0.0", floatv(0), floatv(math.Copysign(0, -1)), true},
		{"1 == complex(1, 0)", intv(1), complexv(1, 0), true},
		{"1.0 == complex(1, 0)", floatv(1), complexv(1, 0), true},
		{"1 == complex(1, 1)", intv(1), complexv(1, 1), false},
		{"complex(1, 2) == complex(1, 2)", complexv(1, 2), complexv(1, 2), true},
		{"complex(1, 2) == complex(1, -2)", complexv(1, 2), complexv(1, -2), false},
		{"2**53 + 1 == float(2**53)", intv(two53 + 1), floatv(float64(two53)), false},
		{"2**53 == float(2**53)", intv(two53), floatv(float64(two53)), true},
		{"10**30 == 1e30", bigv(bigFromString("1" + strings.Repeat("0", 30))), floatv(1e30), false},
		{"1000000000000000019884624838656 == 1e30", bigv(bigFromString("1000000000000000019884624838656")), floatv(1e30), true},
		{"-(2**63) == -9.223372036854775808e18", intv(math.MinInt64), floatv(-9.223372036854775808e18), true},
		{"10**400 == 10**400", bigv(bigFromString("1" + strings.Repeat("0", 400))), bigv(bigFromString("1" + strings.Repeat("0", 400))), true},
		{"10**400 == 10**400 + 1", bigv(bigFromString("1" + strings.Repeat("0", 400))), bigv(bigFromString("1" + strings.Repeat("0", 399) + "1")), false},
		{"-5 == -5", intv(-5), paddedInt(-5, 8), true},
		{"float('inf') == float('inf')", floatv(math.Inf(1)), floatv(math.Inf(1)), true},
		{"float('inf') == float('-inf')", floatv(math.Inf(1)), floatv(math.Inf(-1)), false},
		{"float('inf') == 10**400", floatv(math.Inf(1)), bigv(bigFromString("1" + strings.Repeat("0", 400))), false},
		{"float('nan') == float('nan')", floatv(math.NaN()), floatv(math.NaN()), false},
		{"complex(float('nan'), 0) == complex(float('nan'), 0)", complexv(math.NaN(), 0), complexv(math.NaN(), 0), false},
		// None, str, bytes
		{"None == None", none(), none(), true},
		{"None == 0", none(), intv(0), false},
		{"None == False", none(), boolv(false), false},
		{"'a' == 'a'", strv("a"), strv("a"), true},
		{"'a' == 'b'", strv("a"), strv("b"), false},
		{"'a' == b'a'", strv("a"), bytesv("a"), false},
		{"b'a' == b'a'", bytesv("a"), bytesv("a"), true},
		{"'1' == 1", strv("1"), intv(1), false},
		{"'' == []", strv(""), listv(), false},
		{"'ab' * 4096 == 'ab' * 4096", strv(long), strv(long), true},
		{"'ab' * 4096 == 'ab' * 4095 + 'aa'", strv(long), strv(long[:len(long)-1] + "a"), false},
		{"'ab' * 4096 == b'ab' * 4096", strv(long), bytesv(long), false},
		// sequences
		{"[1, 2] == [1, 2]", listv(intv(1), intv(2)), listv(intv(1), intv(2)), true},
		{"[1, 2] == [2, 1]", listv(intv(1), intv(2)), listv(intv(2), intv(1)), false},
		{"[1] == [1, 1]", listv(intv(1)), listv(intv(1), intv(1)), false},
		{"(1,) == [1]", tuplev(intv(1)), listv(intv(1)), false},
		{"() == []", tuplev(), listv(), false},
		{"[1, 2.0] == [1.0, 2]", listv(intv(1), floatv(2)), listv(floatv(1), intv(2)), true},
		{"[True, 0] == [1, False]", listv(boolv(true), intv(0)), listv(intv(1), boolv(false)), true},
		{"[[1], (2,)] == [[1.0], (2.0,)]", listv(listv(intv(1)), tuplev(intv(2))), listv(listv(floatv(1)), tuplev(floatv(2))), true},
		{"[float('nan')] == [float('nan')]", listv(floatv(math.NaN())), listv(floatv(math.NaN())), false},
		{"[None] == [None]", listv(none()), listv(none()), true},
		// sets and dicts
		{"{1, 2} == {2, 1}", setv(intv(1), intv(2)), setv(intv(2), intv(1)), true},
		{"{1, 2} == frozenset({1, 2})", setv(intv(1), intv(2)), frozensetv(intv(2), intv(1)), true},
		{"{1, 2} == {1, 3}", setv(intv(1), intv(2)), setv(intv(1), intv(3)), false},
		{"{1, 2} == {1}", setv(intv(1), intv(2)), setv(intv(1)), false},
		{"{1} == {1.0}", setv(intv(1)), setv(floatv(1)), true},
		{"{1} == {True}", setv(intv(1)), setv(boolv(true)), true},
		{"{(1, 2)} == {(1.0, 2.0)}", setv(tuplev(intv(1), intv(2))), setv(tuplev(floatv(1), floatv(2))), true},
		{"{(1, 2)} == {(2, 1)}", setv(tuplev(intv(1), intv(2))), setv(tuplev(intv(2), intv(1))), false},
		{"{frozenset({1})} == {frozenset({1.0})}", setv(frozensetv(intv(1))), setv(frozensetv(floatv(1))), true},
		{"{'ab' * 4096} == {'ab' * 4096}", setv(strv(long)), setv(strv(long)), true},
		{"set() == frozenset()", setv(), frozensetv(), true},
		{"set() == []", setv(), listv(), false},
		{"{0.5, -0.0} == {0, 0.5}", setv(floatv(0.5), floatv(math.Copysign(0, -1))), setv(intv(0), floatv(0.5)), true},
		{"{float('nan')} == {float('nan')}", setv(floatv(math.NaN())), setv(floatv(math.NaN())), false},
		{"{'a': 1} == {'a': 1.0}", dictv(strv("a"), intv(1)), dictv(strv("a"), floatv(1)), true},
		{"{'a': 1, 'b': 2} == {'b': 2, 'a': 1}", dictv(strv("a"), intv(1), strv("b"), intv(2)), dictv(strv("b"), intv(2), strv("a"), intv(1)), true},
		{"{'a': 1} == {'a': 2}", dictv(strv("a"), intv(1)), dictv(strv("a"), intv(2)), false},
		{"{'a': 1} == {'b': 1}", dictv(strv("a"), intv(1)), dictv(strv("b"), intv(1)), false},
		{"{1: 'x'} == {True: 'x'}", dictv(intv(1), strv("x")), dictv(boolv(true), strv("x")), true},
		{"{1: 'x'} == {1.0: 'x'}", dictv(intv(1), strv("x")), dictv(floatv(1), strv("x")), true},
		{"{(1, 'a'): [1]} == {(1, 'a'): [1]}", dictv(tuplev(intv(1), strv("a")), listv(intv(1))), dictv(tuplev(intv(1), strv("a")), listv(intv(1))), true},
		{"{1: float('nan')} == {1: float('nan')}", dictv(intv(1), floatv(math.NaN())), dictv(intv(1), floatv(math.NaN())), false},
		{"{} == {}", dictv(), dictv(), true},
		{"{} == set()", dictv(), setv(), false},
		{"{'a': 1} == [('a', 1)]", dictv(strv("a"), intv(1)), listv(tuplev(strv("a"), intv(1))), false},
	}
}

func TestEqualityTable(t *testing.T) {
	for _, c := range equalityTable() {
		a, b := mustParse(t, c.a), mustParse(t, c.b)
		if got := Equal(a, b); got != c.eq {
			t.Errorf("%s: Equal = %v, Python says %v", c.py, got, c.eq)
		}
		if got := Equal(b, a); got != c.eq {
			t.Errorf("%s (swapped): Equal = %v, Python says %v", c.py, got, c.eq)
		}
	}
}

func TestOtherNeverEqual(t *testing.T) {
	x := mustParse(t, otherv("AlwaysEqual"))
	for _, y := range []v{otherv("AlwaysEqual"), intv(1), none(), listv()} {
		if Equal(x, mustParse(t, y)) || Equal(mustParse(t, y), x) {
			t.Errorf("an other marker equals %x", []byte(y))
		}
	}
	if Equal(mustParse(t, listv(otherv("X"))), mustParse(t, listv(otherv("X")))) {
		t.Error("lists holding other markers are equal")
	}
}

func TestForgedDuplicatesNeverEqual(t *testing.T) {
	// Python cannot make these; a forged value must not pass for a real one.
	cases := [][2]v{
		{setv(intv(1), intv(2)), setv(intv(1), intv(1))},
		{setv(intv(1), intv(2)), setv(intv(1), floatv(1))},
		{dictv(intv(1), strv("x"), intv(2), strv("y")), dictv(intv(1), strv("x"), intv(1), strv("x"))},
	}
	for _, c := range cases {
		a, b := mustParse(t, c[0]), mustParse(t, c[1])
		if Equal(a, b) || Equal(b, a) {
			t.Errorf("%x equals forged %x", []byte(c[0]), []byte(c[1]))
		}
	}
}
