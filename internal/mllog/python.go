package mllog

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
)

// The upstream checker evaluates its rules as Python expressions over
// decoded JSON. The helpers below give the same answers, including the
// cases where Python raises TypeError (which the checker reports as a
// failed check, or, in an at-least-one check, dies on).

// errType stands for a Python TypeError (or KeyError) raised by a rule
// expression.
var errType = errors.New("type error")

// pyNumber reports whether v takes part in Python arithmetic comparisons
// (int, float, bool).
func pyNumber(v Value) bool { return v.kind == Int || v.kind == Float || v.kind == Bool }

// pyCmp compares the number v with the constant c exactly, as Python
// compares int with float: it returns -1, 0 or +1, and ok false when
// either side is NaN (every ordered comparison is then false).
func pyCmp(v Value, c float64) (cmp int, ok bool) {
	if math.IsNaN(c) {
		return 0, false
	}
	switch v.kind {
	case Float:
		switch f := v.f(); {
		case math.IsNaN(f):
			return 0, false
		case f < c:
			return -1, true
		case f > c:
			return 1, true
		}
		return 0, true
	case Bool:
		f := 0.0
		if v.b {
			f = 1
		}
		return pyCmp(floatValue(f), c)
	case Int:
		cf := new(big.Float).SetFloat64(c)
		var x *big.Float
		if v.big != nil {
			x = new(big.Float).SetInt(v.big)
		} else {
			x = new(big.Float).SetInt64(v.i())
		}
		return x.Cmp(cf), true
	}
	return 0, false
}

// pyGE, pyGT and pyLT evaluate v >= c, v > c and v < c; a non-number
// raises TypeError.
func pyGE(v Value, c float64) (bool, error) {
	if !pyNumber(v) {
		return false, errType
	}
	r, ok := pyCmp(v, c)
	return ok && r >= 0, nil
}

func pyGT(v Value, c float64) (bool, error) {
	if !pyNumber(v) {
		return false, errType
	}
	r, ok := pyCmp(v, c)
	return ok && r > 0, nil
}

func pyLT(v Value, c float64) (bool, error) {
	if !pyNumber(v) {
		return false, errType
	}
	r, ok := pyCmp(v, c)
	return ok && r < 0, nil
}

// pyEqNum evaluates v == c for a numeric constant: never an error.
func pyEqNum(v Value, c float64) bool {
	if !pyNumber(v) {
		return false
	}
	r, ok := pyCmp(v, c)
	return ok && r == 0
}

// pyEqStr evaluates v == s for a string constant.
func pyEqStr(v Value, s string) bool { return v.kind == String && v.s == s }

// pyEqual is Python's == on two decoded JSON values.
func pyEqual(a, b Value) bool {
	if pyNumber(a) && pyNumber(b) {
		return pyNumEqual(a, b)
	}
	if a.kind != b.kind {
		return false
	}
	a, b = a.expand(), b.expand()
	switch a.kind {
	case Null:
		return true
	case String:
		return a.s == b.s
	case Array:
		if len(a.items) != len(b.items) {
			return false
		}
		for i := range a.items {
			if !pyEqual(a.items[i].Value, b.items[i].Value) {
				return false
			}
		}
		return true
	case Object:
		// Python dicts: last duplicate wins, order does not matter.
		da, db := asDict(a), asDict(b)
		if len(da) != len(db) {
			return false
		}
		for k, va := range da {
			vb, ok := db[k]
			if !ok || !pyEqual(va, vb) {
				return false
			}
		}
		return true
	}
	return false
}

// asDict returns an object's members as Python's dict holds them: the
// last of duplicate names wins.
func asDict(v Value) map[string]Value {
	m := make(map[string]Value, len(v.items))
	for _, mb := range v.items {
		m[mb.Name] = mb.Value
	}
	return m
}

func pyNumEqual(a, b Value) bool {
	if a.kind == Float && b.kind == Float {
		return a.f() == b.f()
	}
	if a.kind == Float {
		a, b = b, a
	}
	if b.kind == Float {
		r, ok := pyCmp(a, b.f())
		return ok && r == 0
	}
	// Both int or bool.
	return a.BigIntOrBool().Cmp(b.BigIntOrBool()) == 0
}

// BigIntOrBool returns an Int or Bool value as a big.Int (bools as 0/1).
func (v Value) BigIntOrBool() *big.Int {
	if v.kind == Bool {
		if v.b {
			return big.NewInt(1)
		}
		return big.NewInt(0)
	}
	return v.BigInt()
}

// pyAllSame is the checker's all_same over reported values: every value
// equals the first. As in Python's list.count, the first element always
// matches itself (so a single NaN counts once).
func pyAllSame(vals []Value) bool {
	for _, v := range vals[1:] {
		if !pyEqual(vals[0], v) {
			return false
		}
	}
	return true
}

// pyContains evaluates `needle in container` for a string needle: dict
// key membership, list element equality, substring for strings, TypeError
// for anything else.
func pyContains(container Value, needle string) (bool, error) {
	switch container.kind {
	case Object:
		_, ok := container.Get(needle)
		return ok, nil
	case Array:
		for _, e := range container.expand().items {
			if pyEqStr(e.Value, needle) {
				return true, nil
			}
		}
		return false, nil
	case String:
		return strings.Contains(container.s, needle), nil
	}
	return false, errType
}

// pySubscript evaluates container[name] for a string subscript: only a
// dict that has the key succeeds.
func pySubscript(container Value, name string) (Value, error) {
	if container.kind != Object {
		return Value{}, errType
	}
	v, ok := container.Get(name)
	if !ok {
		return Value{}, errType
	}
	return v, nil
}

// floatOutcome says how Python's float(x) went for a time_ms value.
type floatOutcome int

const (
	floatOK         floatOutcome = iota
	floatValueError              // ValueError: the checker counts a parsing error
	floatCrash                   // TypeError or OverflowError: the checker dies
)

// pyFloat is Python's float(x) on a decoded JSON value.
func pyFloat(v Value) (float64, floatOutcome) {
	switch v.kind {
	case Float:
		return v.f(), floatOK
	case Bool:
		if v.b {
			return 1, floatOK
		}
		return 0, floatOK
	case Int:
		if v.big == nil {
			return float64(v.i()), floatOK
		}
		f, _ := new(big.Float).SetInt(v.big).Float64()
		if math.IsInf(f, 0) {
			return 0, floatCrash // OverflowError: int too large to convert to float
		}
		return f, floatOK
	case String:
		if f, ok := pyFloatString(v.s); ok {
			return f, floatOK
		}
		return 0, floatValueError
	}
	return 0, floatCrash
}

// pyDigit returns the value of a Unicode decimal digit (category Nd),
// which Python's float() accepts in place of ASCII digits. Nd characters
// come in runs of ten starting at zero.
func pyDigit(r rune) (byte, bool) {
	if r < 0x80 {
		if r >= '0' && r <= '9' {
			return byte(r - '0'), true
		}
		return 0, false
	}
	if !unicode.Is(unicode.Nd, r) {
		return 0, false
	}
	start := r
	for start > 0 && unicode.Is(unicode.Nd, start-1) {
		start--
	}
	return byte((r - start) % 10), true
}

// pyFloatString is Python's float(str): surrounding whitespace, a sign,
// inf/infinity/nan in any case, decimal digits from any script, and single
// underscores between digits; no hexadecimal.
func pyFloatString(s string) (float64, bool) {
	// Map to ASCII the way CPython does before parsing: ASCII stays as it
	// is (so only " \t\n\v\f\r" count as space, not \x1c-\x1f), other
	// whitespace becomes a space and other decimal digits ASCII digits.
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := decodeWTF8(s[i:])
		i += n
		switch {
		case r < 0:
			return 0, false
		case r < 0x80:
			if r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r' {
				r = ' '
			}
			b.WriteRune(r)
		case unicode.IsSpace(r):
			b.WriteByte(' ')
		default:
			d, ok := pyDigit(r)
			if !ok {
				return 0, false
			}
			b.WriteByte('0' + d)
		}
	}
	t := strings.Trim(b.String(), " ")
	if t == "" || strings.ContainsRune(t, ' ') {
		return 0, false
	}
	body := t
	neg := false
	if body[0] == '+' || body[0] == '-' {
		neg = body[0] == '-'
		body = body[1:]
	}
	switch strings.ToLower(body) {
	case "inf", "infinity":
		if neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "nan":
		return math.NaN(), true
	}
	// Grammar: digits ["." [digits]] [exp] | "." digits [exp], where
	// digits = digit (["_"] digit)* and exp = [eE] [+-] digits.
	clean := make([]byte, 0, len(t))
	if neg {
		clean = append(clean, '-')
	}
	i := 0
	scanDigits := func() bool {
		startI := i
		for i < len(body) {
			c := body[i]
			if c >= '0' && c <= '9' {
				clean = append(clean, c)
				i++
				continue
			}
			if c == '_' && i > startI && i+1 < len(body) && body[i+1] >= '0' && body[i+1] <= '9' {
				i++
				continue
			}
			break
		}
		return i > startI
	}
	intPart := scanDigits()
	fracPart := false
	if i < len(body) && body[i] == '.' {
		clean = append(clean, '.')
		i++
		fracPart = scanDigits()
	}
	if !intPart && !fracPart {
		return 0, false
	}
	if i < len(body) && (body[i] == 'e' || body[i] == 'E') {
		clean = append(clean, 'e')
		i++
		if i < len(body) && (body[i] == '+' || body[i] == '-') {
			clean = append(clean, body[i])
			i++
		}
		if !scanDigits() {
			return 0, false
		}
	}
	if i != len(body) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(clean), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}
