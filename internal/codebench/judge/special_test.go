package judge

import (
	"testing"
)

// runMBPPOracle runs one oracle over steps, as runOracle does, for an MBPP+
// entry point.
func runMBPPOracle(t *testing.T, entry string, atol float64, args string, steps []oracleStep) {
	t.Helper()
	o := mbppOracle(atol, entry)
	for i, s := range steps {
		ok, why := o.Check([]byte(args), mustParse(t, s.out), mustParse(t, s.exp))
		if ok != s.pass {
			t.Errorf("step %d: pass = %v (%s), want %v", i, ok, why, s.pass)
		}
	}
}

// Each of EvalPlus's special MBPP oracles (evalplus/eval/__init__.py at
// 26d6d00), by the task it concerns; the expectations were checked against
// EvalPlus's code under CPython 3.11.
func TestMBPPSpecialOracles(t *testing.T) {
	// Mbpp/2 and the other MBPP_OUTPUT_SET_EQ_TASKS: set(out) == set(exp)
	// replaces equality.
	t.Run("Mbpp/2 similar_elements set comparison", func(t *testing.T) {
		exp := tuplev(intv(4), intv(5))
		runMBPPOracle(t, "similar_elements", 0, "[[3,4,5,6],[5,7,4,10]]", []oracleStep{
			{tuplev(intv(5), intv(4)), exp, true},                                            // another order
			{listv(intv(5), intv(4), intv(4)), exp, true},                                    // a list with a duplicate
			{setv(floatv(4), boolv(true), intv(5)), tuplev(intv(1), intv(4), intv(5)), true}, // 4.0 == 4, True == 1
			{tuplev(intv(4)), exp, false},                                                    // one missing
			{otherv("Yes"), exp, false},                                                      // set() of an unknown object
			{listv(listv(intv(4)), intv(5)), exp, false},                                     // unhashable element: set() raises
			{strv("ab"), tuplev(strv("b"), strv("a")), true},                                 // set("ab")
			{intv(4), exp, false},                                                            // not iterable
		})
	})
	for _, task := range []struct{ id, entry string }{{"Mbpp/7", "find_char_long"}, {"Mbpp/111", "common_in_nested_lists"},
		{"Mbpp/140", "extract_singly"}, {"Mbpp/232", "larg_nnum"}, {"Mbpp/579", "find_dissimilar"}, {"Mbpp/769", "Diff"}} {
		t.Run(task.id+" "+task.entry+" set comparison", func(t *testing.T) {
			runMBPPOracle(t, task.entry, 0, "[]", []oracleStep{
				{listv(intv(3), intv(1)), listv(intv(1), intv(3)), true},
				{listv(intv(3)), listv(intv(1), intv(3)), false},
			})
		})
	}
	// Mbpp/737, 787, 794 (MBPP_OUTPUT_NOT_NONE_TASKS): the ground truth is
	// whether the canonical output (a re.Match or None) is not None.
	for _, task := range []struct{ id, entry string }{{"Mbpp/737", "check_str"}, {"Mbpp/787", "text_match_three"}, {"Mbpp/794", "text_starta_endb"}} {
		t.Run(task.id+" "+task.entry+" not None", func(t *testing.T) {
			runMBPPOracle(t, task.entry, 0, `["annie"]`, []oracleStep{
				{otherv("re.Match"), boolv(true), true},
				{v{tagNone}, boolv(false), true},
				{v{tagNone}, boolv(true), false},
				{boolv(true), boolv(true), true},
				{boolv(true), boolv(false), false},
				{intv(0), boolv(true), true}, // not None
				{intv(0), boolv(false), false},
				{strv(""), boolv(true), true},
			})
		})
	}
	// Mbpp/581: an output equal to _surface_Area(*inp) (the height as the
	// distance from base to apex, rounded) also passes. For (3, 4): the
	// canonical 2*3*4 + 3**2 = 33; the alternative round(9 + 4*(3*sqrt(2.25 +
	// 16))/2) = round(34.63...) = 35.
	t.Run("Mbpp/581 surface_Area alternative answer", func(t *testing.T) {
		runMBPPOracle(t, "surface_Area", 0, "[3, 4]", []oracleStep{
			{intv(33), intv(33), true},
			{intv(35), intv(33), true},
			{floatv(35), intv(33), true},
			{intv(34), intv(33), false},
			{strv("35"), intv(33), false},
		})
		// round half to even: b=2, h=0 gives 4 + 4*(2*1)/2 = 8 exactly; b=1,
		// h=0: 1 + 4*(1*0.5)/2 = 2.
		runMBPPOracle(t, "surface_Area", 0, "[1, 0]", []oracleStep{{intv(2), intv(0), true}, {intv(3), intv(0), false}})
		runMBPPOracle(t, "surface_Area", 0, "[2.5, 1.5]", []oracleStep{{intv(16), intv(0), true}, {intv(17), intv(0), false}})
		// Booleans are the ints 1 and 0 (Mbpp/581's plus inputs have
		// them): _surface_Area(True, True) = round(1 + 4*sqrt(1.25)/2) = 3,
		// _surface_Area(20, True) = 802.
		runMBPPOracle(t, "surface_Area", 0, "[true, true]", []oracleStep{{intv(3), intv(0), true}, {intv(4), intv(0), false}})
		runMBPPOracle(t, "surface_Area", 0, "[20, true]", []oracleStep{{intv(802), intv(0), true}, {intv(801), intv(0), false}})
	})
	// Mbpp/558: an output equal to _digit_distance_nums(*inp) (digits
	// zero-filled to the same length) also passes. For (123, 45): canonical
	// 6 (zip stops early), alternative 5.
	t.Run("Mbpp/558 digit_distance_nums alternative answer", func(t *testing.T) {
		runMBPPOracle(t, "digit_distance_nums", 0, "[123, 45]", []oracleStep{
			{intv(6), intv(6), true},
			{intv(5), intv(6), true},
			{boolv(true), intv(1), true},
			{intv(7), intv(6), false},
		})
		// A negative number: int('-') raises in the oracle, so only an
		// exact answer passes.
		runMBPPOracle(t, "digit_distance_nums", 0, "[-12, 3]", []oracleStep{{intv(2), intv(2), true}, {intv(3), intv(2), false}})
		// str(True) is "True": int('T') raises.
		runMBPPOracle(t, "digit_distance_nums", 0, "[true, 3]", []oracleStep{{intv(2), intv(2), true}, {intv(3), intv(2), false}})
	})
	// are_equivalent (Mbpp/164 in older MBPP+ versions) passes anything;
	// sum_div (Mbpp/295) also passes 0. Neither entry point is in v0.2.0.
	t.Run("are_equivalent always passes", func(t *testing.T) {
		runMBPPOracle(t, "are_equivalent", 0, "[1, 2]", []oracleStep{{boolv(false), boolv(true), true}, {strv("x"), boolv(true), true}})
	})
	t.Run("sum_div passes 0", func(t *testing.T) {
		runMBPPOracle(t, "sum_div", 0, "[8]", []oracleStep{{intv(0), intv(7), true}, {floatv(0), intv(7), true}, {intv(1), intv(7), false}})
	})
	// Mbpp/124: a float task with atol 1e-4 from the dataset.
	t.Run("Mbpp/124 angle_complex atol", func(t *testing.T) {
		runMBPPOracle(t, "angle_complex", 1e-4, `["0", "1j"]`, []oracleStep{
			{floatv(1.5707963267948966 + 1e-6), floatv(1.5707963267948966), true},
			{floatv(1.5707963267948966 + 1e-3), floatv(1.5707963267948966), false},
		})
	})
	// find_zero's oracle is HumanEval's only.
	t.Run("no find_zero oracle in MBPP+", func(t *testing.T) {
		if mbppOracle(0, "find_zero").kind != OracleEqual {
			t.Fatal("find_zero oracle applied to an MBPP+ task")
		}
	})
}

// A digest ('D', Mbpp/255's huge outputs) equals only the same digest.
func TestDigestValues(t *testing.T) {
	d := func(kind byte, n uint32, sum byte) v {
		b := v{tagDigest, kind, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
		b = append(b, 0, 0, 0, 0, 0, 0, 1, 0)
		for i := 0; i < 32; i++ {
			b = append(b, sum)
		}
		return b
	}
	a := mustParse(t, d(tagList, 5, 1))
	if !Equal(a, mustParse(t, d(tagList, 5, 1))) || Equal(a, mustParse(t, d(tagList, 5, 2))) || Equal(a, mustParse(t, d(tagTuple, 5, 1))) {
		t.Fatal("digest equality is wrong")
	}
	if Equal(a, mustParse(t, listv())) || a.Kind() != "list" {
		t.Fatal("a digest equals a list, or is no list")
	}
	for name, b := range map[string]v{
		"in a list": listv(d(tagList, 1, 1)),
		"bad kind":  d(tagDict, 1, 1),
		"truncated": d(tagList, 1, 1)[:40],
	} {
		if _, err := ParseValue(b, DefaultBounds); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
