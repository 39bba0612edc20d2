package judge

import (
	"testing"

	"github.com/reprolab/repro/internal/codebench/judge/judgetest"
)

func TestEqualityTable(t *testing.T) {
	for _, c := range judgetest.EqualityTable() {
		a, b := mustParse(t, c.A), mustParse(t, c.B)
		if got := Equal(a, b); got != c.Eq {
			t.Errorf("%s: Equal = %v, Python says %v", c.Py, got, c.Eq)
		}
		if got := Equal(b, a); got != c.Eq {
			t.Errorf("%s (swapped): Equal = %v, Python says %v", c.Py, got, c.Eq)
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
