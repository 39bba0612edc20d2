package judge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Default tolerances of EvalPlus's comparison.
const (
	// floatAtol is the atol EvalPlus uses for a task whose dataset atol is 0
	// once an expected output is a float or a non-empty list or tuple of floats.
	floatAtol = 1e-6
	// rtol is numpy.allclose's relative tolerance as EvalPlus calls it.
	rtol = 1e-7
)

// oracle decides, input after input, whether the outputs of one program are
// correct, with the rules of EvalPlus's untrusted_check (evalplus@26d6d00,
// evalplus/eval/__init__.py) applied on the host to plain data:
//
//  1. exact = out == exp, with Python equality (see Equal), or what the
//     task's special oracle (TaskRules.Oracle, see rules.go) makes of it;
//  2. for find_zero (HumanEval/32) only |poly(xs, out)| <= atol counts;
//  3. if atol is 0 and exp is a float or a non-empty list or tuple of floats,
//     atol becomes 1e-6 and stays so for the following inputs;
//  4. if not exact and atol != 0: the types must be equal, lists and tuples
//     of equal length, and numpy.allclose(out, exp, rtol=1e-7, atol) true;
//  5. otherwise exact decides.
//
// An Oracle is used for one run of one program over one input list.
type Oracle struct {
	atol float64
	kind OracleKind
}

// NewOracle returns the oracle of a task whose dataset atol is atol and
// whose special oracle is kind, for one run over one input list.
func NewOracle(atol float64, kind OracleKind) *Oracle {
	return &Oracle{atol: atol, kind: kind}
}

// Check returns whether out is correct for the input args given exp, and
// why not. out may be an "other" marker only for the not-None oracle.
func (o *Oracle) Check(args json.RawMessage, out, exp Value) (bool, string) {
	if o.kind == OracleFindZero {
		return findZeroOK(args, out, o.atol)
	}
	exact, why := o.special(args, out, exp)
	if why != "" {
		return false, why
	}
	if o.atol == 0 && isFloats(exp) {
		o.atol = floatAtol
	}
	if exact {
		return true, ""
	}
	if o.atol == 0 {
		return false, "output differs from the expected output"
	}
	if out.Kind() != exp.Kind() || out[0] == tagOther {
		return false, fmt.Sprintf("output of type %s where %s is expected", out.Kind(), exp.Kind())
	}
	if exp[0] == tagList || exp[0] == tagTuple {
		if count(out, 0) != count(exp, 0) {
			return false, fmt.Sprintf("output has %d items where %d are expected", count(out, 0), count(exp, 0))
		}
	}
	ok, err := allclose(out, exp, rtol, o.atol)
	if err != nil {
		return false, err.Error()
	}
	if !ok {
		return false, fmt.Sprintf("output is not within atol=%g, rtol=%g of the expected output", o.atol, rtol)
	}
	return true, ""
}

// isFloats is EvalPlus's is_floats for plain data.
func isFloats(v Value) bool {
	switch v[0] {
	case tagFloat:
		return true
	case tagList, tagTuple:
		its := items(v, 0)
		if len(its) == 0 {
			return false
		}
		for _, p := range its {
			if v[p] != tagFloat {
				return false
			}
		}
		return true
	}
	return false
}

// array is a value as numpy.asarray would make it for a numeric comparison.
type array struct {
	shape   []int
	re, im  []float64
	complex bool
}

// toArray converts like numpy.asarray for the values numpy turns into a
// numeric array: numbers and rectangular nests of lists and tuples of them.
// Ints outside the int64 and uint64 ranges, strings, None, dicts, sets and
// ragged nests make numpy fail (an object array or an error), and so an
// error here.
func toArray(v []byte) (*array, error) {
	a := &array{}
	var walk func(i, depth int) error
	walk = func(i, depth int) error {
		if n, ok := numberAt(v, i); ok {
			if depth != len(a.shape) {
				return fmt.Errorf("ragged nesting cannot form an array")
			}
			switch n.kind {
			case 'f':
				a.re, a.im = append(a.re, n.f), append(a.im, 0)
			case 'c':
				a.re, a.im = append(a.re, n.f), append(a.im, n.im)
				a.complex = true
			default:
				f, ok := intToArrayFloat(n)
				if !ok {
					return fmt.Errorf("int out of range for a numeric array")
				}
				a.re, a.im = append(a.re, f), append(a.im, 0)
			}
			return nil
		}
		i = base(v, i)
		if v[i] != tagList && v[i] != tagTuple {
			return fmt.Errorf("%s cannot be compared with a tolerance", kindName(v, i))
		}
		n := count(v, i)
		if depth == len(a.shape) {
			if len(a.re) > 0 {
				return fmt.Errorf("ragged nesting cannot form an array")
			}
			a.shape = append(a.shape, n)
		} else if depth > len(a.shape) || a.shape[depth] != n {
			return fmt.Errorf("ragged nesting cannot form an array")
		}
		for _, p := range items(v, i) {
			if err := walk(p, depth+1); err != nil {
				return err
			}
		}
		if n == 0 && depth+1 < len(a.shape) {
			return fmt.Errorf("ragged nesting cannot form an array")
		}
		return nil
	}
	if err := walk(0, 0); err != nil {
		return nil, err
	}
	size := 1
	for _, d := range a.shape {
		size *= d
	}
	if size != len(a.re) {
		return nil, fmt.Errorf("ragged nesting cannot form an array")
	}
	return a, nil
}

// intToArrayFloat converts an int the way numpy stores it in a float
// array: int64 and uint64 values convert with rounding, others fail.
func intToArrayFloat(n number) (float64, bool) {
	if n.big == nil {
		return float64(n.small), true
	}
	if n.big.IsUint64() {
		return float64(n.big.Uint64()), true
	}
	if n.big.IsInt64() {
		return float64(n.big.Int64()), true
	}
	return 0, false
}

// allclose is numpy.allclose(out, exp, rtol, atol) (numpy 1.24) for the
// arrays toArray accepts, with numpy's broadcasting.
func allclose(out, exp Value, rtol, atol float64) (bool, error) {
	x, err := toArray(out)
	if err != nil {
		return false, fmt.Errorf("output cannot be compared with a tolerance: %v", err)
	}
	y, err := toArray(exp)
	if err != nil {
		return false, fmt.Errorf("expected output cannot be compared with a tolerance: %v", err)
	}
	shape, ok := broadcast(x.shape, y.shape)
	if !ok {
		return false, fmt.Errorf("output of shape %v does not broadcast with the expected shape %v", x.shape, y.shape)
	}
	cplx := x.complex || y.complex
	size := 1
	for _, d := range shape {
		size *= d
	}
	idx := make([]int, len(shape))
	for k := 0; k < size; k++ {
		xi, yi := flatIndex(idx, x.shape, len(shape)), flatIndex(idx, y.shape, len(shape))
		if !isclose(x.re[xi], x.im[xi], y.re[yi], y.im[yi], cplx, rtol, atol) {
			return false, nil
		}
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return true, nil
}

// broadcast returns numpy's broadcast shape of a and b.
func broadcast(a, b []int) ([]int, bool) {
	n := max(len(a), len(b))
	out := make([]int, n)
	for k := 0; k < n; k++ {
		da, db := 1, 1
		if j := len(a) - n + k; j >= 0 {
			da = a[j]
		}
		if j := len(b) - n + k; j >= 0 {
			db = b[j]
		}
		switch {
		case da == db:
			out[k] = da
		case da == 1:
			out[k] = db
		case db == 1:
			out[k] = da
		default:
			return nil, false
		}
	}
	return out, true
}

// flatIndex maps an index of the broadcast shape (rank n) to the flat
// position in an array of shape s.
func flatIndex(idx, s []int, n int) int {
	flat := 0
	for k, d := range s {
		i := idx[n-len(s)+k]
		if d == 1 {
			i = 0
		}
		flat = flat*d + i
	}
	return flat
}

// isclose is numpy.isclose for one element pair, equal_nan false: within
// tolerance when both are finite, otherwise equal.
func isclose(xr, xi, yr, yi float64, cplx bool, rtol, atol float64) bool {
	finite := func(r, i float64) bool {
		return !math.IsInf(r, 0) && !math.IsNaN(r) && !math.IsInf(i, 0) && !math.IsNaN(i)
	}
	if !finite(xr, xi) || !finite(yr, yi) {
		return xr == yr && xi == yi
	}
	var diff, ay float64
	if cplx {
		diff = math.Hypot(xr-yr, xi-yi)
		ay = math.Hypot(yr, yi)
	} else {
		diff = math.Abs(xr - yr)
		ay = math.Abs(yr)
	}
	// The conversions round each product and sum as numpy does; they keep
	// the compiler from fusing the multiply and add.
	return diff <= float64(atol+float64(rtol*ay))
}

// findZeroOK is EvalPlus's oracle for HumanEval/32: the output x passes iff
// abs(_poly(xs, x)) <= atol, where _poly is
// sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)]). The sum is
// taken left to right as CPython 3.11's sum() does; math.pow is computed
// correctly rounded.
func findZeroOK(args json.RawMessage, out Value, atol float64) (bool, string) {
	xs, err := parseCoefficients(args)
	if err != nil {
		return false, fmt.Sprintf("find_zero input: %v", err)
	}
	n, ok := numberAt(out, 0)
	if !ok || n.kind == 'c' {
		return false, fmt.Sprintf("math.pow cannot take a %s", out.Kind())
	}
	x := n.f
	if n.kind == 'i' {
		f, acc := new(big.Float).SetInt(n.bigInt()).Float64()
		if math.IsInf(f, 0) {
			return false, "int too large to convert to float"
		}
		_ = acc
		x = f
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return false, "output is not a finite number"
	}
	sum := 0.0
	for i, c := range xs {
		p, ok := powInt(x, i)
		if !ok {
			return false, "math.pow overflowed"
		}
		sum = sum + float64(c*p)
	}
	if !(math.Abs(sum) <= atol) {
		return false, fmt.Sprintf("|poly(xs, x)| = %g is above atol=%g", math.Abs(sum), atol)
	}
	return true, ""
}

// powInt returns x**i correctly rounded, and false on overflow, as
// math.pow raises OverflowError for a finite x.
func powInt(x float64, i int) (float64, bool) {
	if i == 0 {
		return 1, true
	}
	if x == 0 {
		if math.Signbit(x) && i%2 == 1 {
			return math.Copysign(0, -1), true
		}
		return 0, true
	}
	prec := uint(53*i + 64)
	base := new(big.Float).SetPrec(prec).SetFloat64(x)
	r := new(big.Float).SetPrec(prec).SetFloat64(1)
	for k := 0; k < i; k++ {
		r.Mul(r, base)
	}
	f, _ := r.Float64()
	if math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// parseCoefficients reads the single argument of find_zero, a list of
// numbers, as Python floats (an int coefficient is converted when it is
// multiplied with a float).
func parseCoefficients(args json.RawMessage) ([]float64, error) {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var a [][]json.Number
	if err := dec.Decode(&a); err != nil || len(a) != 1 {
		return nil, fmt.Errorf("want one list of numbers")
	}
	if len(a[0]) > 4096 {
		return nil, fmt.Errorf("%d coefficients", len(a[0]))
	}
	xs := make([]float64, len(a[0]))
	for k, num := range a[0] {
		s := string(num)
		if strings.ContainsAny(s, ".eE") {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("coefficient %s: %v", s, err)
			}
			xs[k] = f
			continue
		}
		bi, ok := new(big.Int).SetString(s, 10)
		if !ok {
			return nil, fmt.Errorf("coefficient %s is not a number", s)
		}
		f, _ := new(big.Float).SetInt(bi).Float64()
		if math.IsInf(f, 0) {
			return nil, fmt.Errorf("coefficient %s too large for a float", s)
		}
		xs[k] = f
	}
	return xs, nil
}
