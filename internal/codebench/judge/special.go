package judge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// special returns EvalPlus's exact_match for the oracle's task: Python
// equality, or what the task's special oracle makes of it. why is set when
// the oracle raises in EvalPlus (the input fails).
func (o *Oracle) special(args json.RawMessage, out, exp Value) (exact bool, why string) {
	switch o.kind {
	case OracleNotNone:
		// The ground truth is a bool: whether the canonical output was not
		// None. A bool output is compared with it; anything else (also an
		// object repro cannot encode) by whether it is not None.
		if out[0] == tagTrue || out[0] == tagFalse {
			return Equal(out, exp), ""
		}
		notNone := Value{tagFalse}
		if out[0] != tagNone {
			notNone[0] = tagTrue
		}
		return Equal(exp, notNone), ""
	case OracleSetEqual:
		a, err := pySet(out)
		if err != "" {
			return false, "set(output) raises: " + err
		}
		b, err := pySet(exp)
		if err != "" {
			return false, "set(expected output) raises: " + err
		}
		return slices.EqualFunc(a, b, bytes.Equal), ""
	}
	if out[0] == tagOther {
		return false, ""
	}
	exact = Equal(out, exp)
	if exact {
		return true, ""
	}
	switch o.kind {
	case OracleAlwaysPass:
		return true, ""
	case OracleOrZero:
		return Equal(out, Value{tagFalse}), "" // out == 0: False is the int 0
	case OracleSurfaceArea:
		alt, err := surfaceArea(args)
		if err != nil {
			return false, "surface_Area oracle: " + err.Error()
		}
		return withinAtol(out, alt, o.atol)
	case OracleDigitDistance:
		alt, err := digitDistance(args)
		if err != nil {
			return false, "digit_distance_nums oracle: " + err.Error()
		}
		return Equal(out, alt), ""
	}
	return false, ""
}

// pySet returns the sorted distinct canonical keys of set(v), or why
// set(v) raises (an unhashable element) or cannot be decided here (NaN or
// an object repro cannot encode, which equal nothing across processes).
func pySet(v Value) ([][]byte, string) {
	var keys [][]byte
	add := func(p int) string {
		if !hashable(v, p) {
			return fmt.Sprintf("unhashable type: '%s'", kindName(v, p))
		}
		k, ok := canonKey(v, p)
		if !ok {
			return "an element that equals nothing (NaN or an unknown object)"
		}
		keys = append(keys, k)
		return ""
	}
	if _, inner := wrapped(v, 0); inner != 0 {
		v = v[inner:] // a subclass's value, an iterator's or a view's items
	}
	switch v[0] {
	case tagList, tagTuple, tagSet, tagFrozenset:
		for _, p := range items(v, 0) {
			if err := add(p); err != "" {
				return nil, err
			}
		}
	case tagDict:
		for _, p := range pairs(v, 0) {
			if err := add(p); err != "" {
				return nil, err
			}
		}
	case tagStr:
		s := string(v[5:])
		for _, r := range s {
			var b []byte
			if r == utf8.RuneError {
				return nil, "a str that is not valid UTF-8"
			}
			b = utf8.AppendRune(b, r)
			k := append([]byte{tagStr, 0, 0, 0, byte(len(b))}, b...)
			key, _ := canonKey(k, 0)
			keys = append(keys, key)
		}
	case tagBytes:
		for _, c := range v[5:] {
			key, _ := appendNumberKey(nil, number{kind: 'i', small: int64(c)})
			keys = append(keys, key)
		}
	default:
		return nil, fmt.Sprintf("'%s' object is not iterable here", v.Kind())
	}
	slices.SortFunc(keys, bytes.Compare)
	return slices.CompactFunc(keys, bytes.Equal), ""
}

// hashable reports whether the value at i can be a set element.
func hashable(b []byte, i int) bool {
	switch mode, inner := wrapped(b, i); mode {
	case wrapView:
		return false
	case wrapIter:
		return true // by identity
	case wrapBase:
		i = inner
	}
	switch b[i] {
	case tagList, tagDict, tagSet:
		return false
	case tagTuple:
		for _, p := range items(b, i) {
			if !hashable(b, p) {
				return false
			}
		}
	}
	return true
}

// withinAtol is EvalPlus's abs(out - alt) <= atol for a real number out
// and an int alt; anything else raises (a fail).
func withinAtol(out Value, alt *big.Int, atol float64) (bool, string) {
	n, ok := numberAt(out, 0)
	if !ok {
		return false, fmt.Sprintf("unsupported operand type(s) for -: '%s' and 'int'", out.Kind())
	}
	if atol == 0 {
		return Equal(out, intValue(alt)), ""
	}
	af, _ := new(big.Float).SetInt(alt).Float64()
	var d float64
	switch n.kind {
	case 'i':
		diff := new(big.Int).Sub(n.bigInt(), alt)
		f, _ := new(big.Float).SetInt(diff).Float64()
		d = math.Abs(f)
	case 'c':
		d = math.Hypot(n.f-af, n.im)
	default:
		d = math.Abs(n.f - af)
	}
	return d <= atol, ""
}

// intValue encodes an int.
func intValue(x *big.Int) Value {
	n := (x.BitLen() + 8) / 8
	raw := make([]byte, n)
	if x.Sign() >= 0 {
		x.FillBytes(raw)
	} else {
		// two's complement of a negative x: 2^(8n) + x
		t := new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), uint(8*n)), x)
		t.FillBytes(raw)
	}
	v := Value{tagInt, 0, 0, 0, 0}
	v[1], v[2], v[3], v[4] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return append(v, raw...)
}

// pyNumber is a Python int, bool or float argument.
type pyNumber struct {
	isInt  bool // int or bool: i holds it
	isBool bool
	i      *big.Int
	f      float64
}

func (p pyNumber) float() (float64, error) {
	if !p.isInt {
		return p.f, nil
	}
	f, _ := new(big.Float).SetInt(p.i).Float64()
	if math.IsInf(f, 0) {
		return 0, fmt.Errorf("int too large to convert to float")
	}
	return f, nil
}

// square is x**2 as Python computes it: exact for an int, rounded for a
// float.
func (p pyNumber) square() pyNumber {
	if p.isInt {
		return pyNumber{isInt: true, i: new(big.Int).Mul(p.i, p.i)}
	}
	return pyNumber{f: p.f * p.f}
}

// numberArgs reads an argument list of n JSON numbers (int or float) or
// booleans (Python's True and False, which are the ints 1 and 0 in
// arithmetic; Mbpp/581 has them).
func numberArgs(args json.RawMessage, n int) ([]pyNumber, error) {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var a []any
	if err := dec.Decode(&a); err != nil || len(a) != n {
		return nil, fmt.Errorf("want %d numbers as arguments", n)
	}
	out := make([]pyNumber, n)
	for k, x := range a {
		if b, ok := x.(bool); ok {
			out[k] = pyNumber{isInt: true, isBool: true, i: big.NewInt(0)}
			if b {
				out[k].i.SetInt64(1)
			}
			continue
		}
		num, ok := x.(json.Number)
		if !ok {
			return nil, fmt.Errorf("argument %d is not a number", k)
		}
		s := string(num)
		if strings.ContainsAny(s, ".eE") {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("argument %s: %v", s, err)
			}
			out[k] = pyNumber{f: f}
			continue
		}
		i, ok := new(big.Int).SetString(s, 10)
		if !ok {
			return nil, fmt.Errorf("argument %s is not a number", s)
		}
		out[k] = pyNumber{isInt: true, i: i}
	}
	return out, nil
}

// surfaceArea is EvalPlus's alternative answer for Mbpp/581
// (_surface_Area): with the height taken as the distance from base to
// apex, round(b**2 + 4 * (b * sqrt((b / 2) ** 2 + h**2)) / 2), rounding
// half to even as Python's round does.
func surfaceArea(args json.RawMessage) (*big.Int, error) {
	a, err := numberArgs(args, 2)
	if err != nil {
		return nil, err
	}
	b, h := a[0], a[1]
	bf, err := b.float()
	if err != nil {
		return nil, err
	}
	half := bf / 2
	h2, err := h.square().float()
	if err != nil {
		return nil, err
	}
	slant := math.Sqrt(float64(half*half) + h2)
	base, err := b.square().float()
	if err != nil {
		return nil, err
	}
	lateral := float64(4*float64(bf*slant)) / 2
	total := base + lateral
	if math.IsInf(total, 0) || math.IsNaN(total) {
		return nil, fmt.Errorf("cannot round %v", total)
	}
	r, _ := new(big.Float).SetFloat64(math.RoundToEven(total)).Int(nil)
	return r, nil
}

// digitDistance is EvalPlus's alternative answer for Mbpp/558
// (_digit_distance_nums): the sum of digit differences of str(a) and
// str(b), both zero-filled to the same length.
func digitDistance(args json.RawMessage) (Value, error) {
	a, err := numberArgs(args, 2)
	if err != nil {
		return nil, err
	}
	var s [2]string
	for k, p := range a {
		if !p.isInt || p.isBool {
			// str() of a float or a bool holds '.', 'e', or letters.
			return nil, fmt.Errorf("invalid literal for int(): the argument is not an int")
		}
		s[k] = p.i.String()
	}
	w := max(len(s[0]), len(s[1]))
	for k := range s {
		s[k] = zfill(s[k], w)
	}
	total := int64(0)
	for k := 0; k < w; k++ {
		x, y := s[0][k], s[1][k]
		if x < '0' || x > '9' || y < '0' || y > '9' {
			return nil, fmt.Errorf("invalid literal for int() with base 10: a sign")
		}
		d := int64(x) - int64(y)
		if d < 0 {
			d = -d
		}
		total += d
	}
	return intValue(big.NewInt(total)), nil
}

// zfill is Python's str.zfill: zeros after a leading sign.
func zfill(s string, w int) string {
	if len(s) >= w {
		return s
	}
	pad := strings.Repeat("0", w-len(s))
	if s != "" && (s[0] == '-' || s[0] == '+') {
		return s[:1] + pad + s[1:]
	}
	return pad + s
}
