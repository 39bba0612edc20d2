package judge

import (
	"math"
	"math/big"
	"strings"
	"testing"
)

// oracleStep is one input of a run: the output, the expected output, and
// whether EvalPlus (numpy 1.24, CPython 3.11) passes it, checked by hand.
type oracleStep struct {
	out, exp v
	pass     bool
}

func runOracle(t *testing.T, name string, atol float64, entry string, args string, steps []oracleStep) {
	t.Helper()
	o := heOracle(atol, entry)
	for i, s := range steps {
		ok, why := o.Check([]byte(args), mustParse(t, s.out), mustParse(t, s.exp))
		if ok != s.pass {
			t.Errorf("%s, step %d: pass = %v (%s), want %v", name, i, ok, why, s.pass)
		}
	}
}

func TestOracleTolerance(t *testing.T) {
	one := func(out, exp v, pass bool) []oracleStep { return []oracleStep{{out, exp, pass}} }
	for _, c := range []struct {
		name  string
		atol  float64
		steps []oracleStep
	}{
		{"dataset atol, within", 1e-6, one(floatv(0.5000001), floatv(0.5), true)},
		{"dataset atol, outside", 1e-6, one(floatv(0.500002), floatv(0.5), false)},
		{"atol 0 becomes 1e-6 for a float", 0, one(floatv(1.0000005), floatv(1), true)},
		{"atol 0 becomes 1e-6, outside", 0, one(floatv(1.000002), floatv(1), false)},
		{"relative part: 1e10 + 1000", 0, one(floatv(1e10+1000), floatv(1e10), true)},
		{"relative part: 1e10 + 1001", 0, one(floatv(1e10+1001), floatv(1e10), false)},
		{"int expected, atol 0: exact only", 0, one(floatv(3.0000001), intv(3), false)},
		{"int for a float passes when equal", 0, one(intv(3), floatv(3), true)},
		{"int for a float, not equal: types differ", 1e-6, one(intv(3), floatv(3.0000001), false)},
		{"NaN output", 0, one(floatv(math.NaN()), floatv(1), false)},
		{"inf equals inf", 0, one(floatv(math.Inf(1)), floatv(math.Inf(1)), true)},
		{"list of floats within", 0, one(listv(floatv(1.0000001), floatv(2)), listv(floatv(1), floatv(2)), true)},
		{"list with an int item within", 0, one(listv(intv(1), floatv(2.0000001)), listv(floatv(1), floatv(2)), true)},
		{"list with a bool item within", 0, one(listv(boolv(true), floatv(2.0000001)), listv(floatv(1), floatv(2)), true)},
		{"tuple for a list", 0, one(tuplev(floatv(1.0000001), floatv(2)), listv(floatv(1), floatv(2)), false)},
		{"shorter list", 0, one(listv(floatv(1.0000001)), listv(floatv(1), floatv(2)), false)},
		{"list with a str item", 0, one(listv(floatv(1.0000001), strv("a")), listv(floatv(1), floatv(2)), false)},
		{"list with None", 0, one(listv(floatv(1.0000001), none()), listv(floatv(1), floatv(2)), false)},
		{"list with a huge int", 0, one(listv(floatv(1.0000001), bigv(bigFromString("1"+strings.Repeat("0", 30)))), listv(floatv(1), floatv(2)), false)},
		{"inf in list against finite", 0, one(listv(floatv(math.Inf(1)), floatv(2)), listv(floatv(1), floatv(2)), false)},
		{"inf in both lists", 0, one(listv(floatv(math.Inf(1)), floatv(2.0000001)), listv(floatv(math.Inf(1)), floatv(2)), true)},
		{"complex for a float", 0, one(complexv(1.0000001, 0), floatv(1), false)},
		{"other object for a float", 0, one(otherv("AlmostEqual"), floatv(1), false)},
		{"empty list: exact", 0, one(listv(), listv(), true)},
		{"tuple of floats", 0, one(tuplev(floatv(1.0000001), floatv(2)), tuplev(floatv(1), floatv(2)), true)},
		// numpy broadcasting, which EvalPlus inherits: a 2x2 nest of the
		// right values passes for a 2-list (len(out) == len(exp) holds).
		{"broadcast quirk", 0, one(listv(listv(floatv(1), floatv(2)), listv(floatv(1), floatv(2))), listv(floatv(1), floatv(2)), true)},
		{"ragged nest", 0, one(listv(listv(floatv(1)), floatv(2)), listv(floatv(1), floatv(2)), false)},
		// The atol raised at the first float expectation stays for the
		// rest of the run: an int list then compares with tolerance.
		{"atol persists", 0, []oracleStep{
			{floatv(0.5), floatv(0.5), true},
			{listv(floatv(1.0000001), intv(2)), listv(intv(1), intv(2)), true},
		}},
		{"without a float before, int lists are exact", 0, []oracleStep{
			{listv(floatv(1.0000001), intv(2)), listv(intv(1), intv(2)), false},
		}},
		{"atol persists, types still checked", 0, []oracleStep{
			{floatv(0.5), floatv(0.5), true},
			{floatv(3.0000001), intv(3), false},
		}},
		{"exact match ignores types", 0, one(listv(intv(1), boolv(true)), listv(floatv(1), intv(1)), true)},
		{"wrong value", 0, one(intv(4), intv(3), false)},
		{"True for 1", 0, one(boolv(true), intv(1), true)},
	} {
		runOracle(t, c.name, c.atol, "f", "[1]", c.steps)
	}
}

func TestFindZeroOracle(t *testing.T) {
	// (x-1)(x-2)(x-3) = -6 + 11x - 6x^2 + x^3, coefficients from x^0 up.
	args := "[[-6, 11, -6, 1]]"
	huge := new(big.Int).Exp(big.NewInt(10), big.NewInt(400), nil)
	for _, s := range []struct {
		name string
		out  v
		pass bool
	}{
		{"root", floatv(1), true},
		{"close to a root", floatv(2.0000001), true},
		{"int root", intv(3), true},
		{"bool root", boolv(true), true},
		{"not a root", floatv(2.1), false},
		{"str", strv("1.0"), false},
		{"complex", complexv(1, 0), false},
		{"None", none(), false},
		{"list", listv(floatv(1)), false},
		{"NaN", floatv(math.NaN()), false},
		{"inf", floatv(math.Inf(1)), false},
		{"int too large for a float", bigv(huge), false},
		{"pow overflows", floatv(1e200), false},
		{"other object", otherv("float"), false},
	} {
		// The expected output is the canonical root; find_zero ignores it.
		runOracle(t, "find_zero "+s.name, 1e-4, "find_zero", args, []oracleStep{{s.out, floatv(1), s.pass}})
	}
	// Float coefficients and a residual right at the edge: with xs = [-1e-4, 1]
	// and x = 0, |poly| = 1e-4 <= atol passes; x = -1e-12 gives 1e-4 + 1e-12.
	runOracle(t, "edge", 1e-4, "find_zero", "[[-0.0001, 1]]", []oracleStep{
		{floatv(0), floatv(0.0001), true},
		{floatv(-1e-12), floatv(0.0001), false},
	})
}

func TestPowInt(t *testing.T) {
	for _, c := range []struct {
		x    float64
		i    int
		want float64
		ok   bool
	}{
		{2, 10, 1024, true}, {-2, 3, -8, true}, {0.1, 2, 0.010000000000000002, true},
		{1.1, 3, 1.3310000000000004, true}, {0, 0, 1, true}, {math.Copysign(0, -1), 3, math.Copysign(0, -1), true},
		{1e200, 2, 0, false}, {1e-200, 2, 0, true}, {3, 0, 1, true},
	} {
		got, ok := powInt(c.x, c.i)
		if ok != c.ok || (ok && (got != c.want || math.Signbit(got) != math.Signbit(c.want))) {
			t.Errorf("powInt(%v, %d) = %v, %v; want %v, %v", c.x, c.i, got, ok, c.want, c.ok)
		}
	}
}
