// Package judgetest builds encoded values, as the harness's encoder writes
// them, for the tests of the judge and of the scoring loop, and holds the
// table of Python equality that both check: judge against its own rules,
// the scoring loop against CPython in the sandbox. It imports nothing of
// judge, so that judge's own tests can use it; judge's tests check that its
// tags and HashThreshold are judge's.
package judgetest

import (
	"encoding/binary"
	"math"
	"math/big"
	"strings"

	"github.com/reprolab/repro/internal/digest"
)

// HashThreshold is judge.HashThreshold.
const HashThreshold = 4096

// V is one encoded value.
type V = []byte

func None() V       { return V{'N'} }
func Bool(b bool) V { return map[bool]V{true: {'T'}, false: {'F'}}[b] }
func Int(x int64) V { return Big(big.NewInt(x)) }

func Big(x *big.Int) V {
	n := (x.BitLen() + 8) / 8
	raw := make([]byte, n)
	if x.Sign() >= 0 {
		x.FillBytes(raw)
	} else {
		// two's complement: 2^(8n) + x
		t := new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), uint(8*n)), x)
		t.FillBytes(raw)
	}
	return append(Len('i', n), raw...)
}

// paddedInt encodes x in exactly n bytes, as the harness's bulk path does.
func PaddedInt(x int64, n int) V {
	raw := make([]byte, 8)
	binary.BigEndian.PutUint64(raw, uint64(x))
	pad := byte(0)
	if x < 0 {
		pad = 0xff
	}
	for len(raw) < n {
		raw = append([]byte{pad}, raw...)
	}
	return append(Len('i', n), raw[len(raw)-n:]...)
}

func Len(tag byte, n int) V {
	b := V{tag}
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

func Float(f float64) V {
	return binary.BigEndian.AppendUint64(V{'f'}, math.Float64bits(f))
}

func Complex(re, im float64) V {
	b := binary.BigEndian.AppendUint64(V{'c'}, math.Float64bits(re))
	return binary.BigEndian.AppendUint64(b, math.Float64bits(im))
}

func Str(s string) V   { return text('s', 'h', s) }
func Bytes(s string) V { return text('b', 'H', s) }

func text(full, hashed byte, s string) V {
	if len(s) > HashThreshold {
		h := digest.Of([]byte(s))
		return append(Len(hashed, len(s)), h[:]...)
	}
	return append(Len(full, len(s)), s...)
}

func seq(tag byte, items ...V) V {
	b := Len(tag, len(items))
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

func List(items ...V) V      { return seq('l', items...) }
func Tuple(items ...V) V     { return seq('t', items...) }
func Set(items ...V) V       { return seq('S', items...) }
func Frozenset(items ...V) V { return seq('Z', items...) }
func Other(name string) V    { return append(Len('X', len(name)), name...) }

// dictv takes key, value, key, value, ...
func Dict(kv ...V) V {
	b := Len('d', len(kv)/2)
	for _, it := range kv {
		b = append(b, it...)
	}
	return b
}

// Case is one row of the table of Python equality: py is the
// expression as Python source (a test evaluates it in the sandbox's CPython), a and b are the same values built here, eq is
// the result, checked by hand against CPython 3.11.
type Case struct {
	Py   string
	A, B V
	Eq   bool
}

func BigFromString(s string) *big.Int {
	x, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return x
}

var long = strings.Repeat("ab", HashThreshold)

func EqualityTable() []Case {
	two53 := int64(1) << 53
	return []Case{
		// numbers across types
		{"1 == True", Int(1), Bool(true), true},
		{"0 == False", Int(0), Bool(false), true},
		{"2 == True", Int(2), Bool(true), false},
		{"1 == 1.0", Int(1), Float(1), true},
		{"True == 1.0", Bool(true), Float(1), true},
		{"1 == 1.5", Int(1), Float(1.5), false},
		{"0 == -0.0", Int(0), Float(math.Copysign(0, -1)), true},
		{"0.0 == -0.0", Float(0), Float(math.Copysign(0, -1)), true},
		{"1 == complex(1, 0)", Int(1), Complex(1, 0), true},
		{"1.0 == complex(1, 0)", Float(1), Complex(1, 0), true},
		{"1 == complex(1, 1)", Int(1), Complex(1, 1), false},
		{"complex(1, 2) == complex(1, 2)", Complex(1, 2), Complex(1, 2), true},
		{"complex(1, 2) == complex(1, -2)", Complex(1, 2), Complex(1, -2), false},
		{"2**53 + 1 == float(2**53)", Int(two53 + 1), Float(float64(two53)), false},
		{"2**53 == float(2**53)", Int(two53), Float(float64(two53)), true},
		{"10**30 == 1e30", Big(BigFromString("1" + strings.Repeat("0", 30))), Float(1e30), false},
		{"1000000000000000019884624838656 == 1e30", Big(BigFromString("1000000000000000019884624838656")), Float(1e30), true},
		{"-(2**63) == -9.223372036854775808e18", Int(math.MinInt64), Float(-9.223372036854775808e18), true},
		{"10**400 == 10**400", Big(BigFromString("1" + strings.Repeat("0", 400))), Big(BigFromString("1" + strings.Repeat("0", 400))), true},
		{"10**400 == 10**400 + 1", Big(BigFromString("1" + strings.Repeat("0", 400))), Big(BigFromString("1" + strings.Repeat("0", 399) + "1")), false},
		{"-5 == -5", Int(-5), PaddedInt(-5, 8), true},
		{"float('inf') == float('inf')", Float(math.Inf(1)), Float(math.Inf(1)), true},
		{"float('inf') == float('-inf')", Float(math.Inf(1)), Float(math.Inf(-1)), false},
		{"float('inf') == 10**400", Float(math.Inf(1)), Big(BigFromString("1" + strings.Repeat("0", 400))), false},
		{"float('nan') == float('nan')", Float(math.NaN()), Float(math.NaN()), false},
		{"complex(float('nan'), 0) == complex(float('nan'), 0)", Complex(math.NaN(), 0), Complex(math.NaN(), 0), false},
		// None, str, bytes
		{"None == None", None(), None(), true},
		{"None == 0", None(), Int(0), false},
		{"None == False", None(), Bool(false), false},
		{"'a' == 'a'", Str("a"), Str("a"), true},
		{"'a' == 'b'", Str("a"), Str("b"), false},
		{"'a' == b'a'", Str("a"), Bytes("a"), false},
		{"b'a' == b'a'", Bytes("a"), Bytes("a"), true},
		{"'1' == 1", Str("1"), Int(1), false},
		{"'' == []", Str(""), List(), false},
		{"'ab' * 4096 == 'ab' * 4096", Str(long), Str(long), true},
		{"'ab' * 4096 == 'ab' * 4095 + 'aa'", Str(long), Str(long[:len(long)-1] + "a"), false},
		{"'ab' * 4096 == b'ab' * 4096", Str(long), Bytes(long), false},
		// sequences
		{"[1, 2] == [1, 2]", List(Int(1), Int(2)), List(Int(1), Int(2)), true},
		{"[1, 2] == [2, 1]", List(Int(1), Int(2)), List(Int(2), Int(1)), false},
		{"[1] == [1, 1]", List(Int(1)), List(Int(1), Int(1)), false},
		{"(1,) == [1]", Tuple(Int(1)), List(Int(1)), false},
		{"() == []", Tuple(), List(), false},
		{"[1, 2.0] == [1.0, 2]", List(Int(1), Float(2)), List(Float(1), Int(2)), true},
		{"[True, 0] == [1, False]", List(Bool(true), Int(0)), List(Int(1), Bool(false)), true},
		{"[[1], (2,)] == [[1.0], (2.0,)]", List(List(Int(1)), Tuple(Int(2))), List(List(Float(1)), Tuple(Float(2))), true},
		{"[float('nan')] == [float('nan')]", List(Float(math.NaN())), List(Float(math.NaN())), false},
		{"[None] == [None]", List(None()), List(None()), true},
		// sets and dicts
		{"{1, 2} == {2, 1}", Set(Int(1), Int(2)), Set(Int(2), Int(1)), true},
		{"{1, 2} == frozenset({1, 2})", Set(Int(1), Int(2)), Frozenset(Int(2), Int(1)), true},
		{"{1, 2} == {1, 3}", Set(Int(1), Int(2)), Set(Int(1), Int(3)), false},
		{"{1, 2} == {1}", Set(Int(1), Int(2)), Set(Int(1)), false},
		{"{1} == {1.0}", Set(Int(1)), Set(Float(1)), true},
		{"{1} == {True}", Set(Int(1)), Set(Bool(true)), true},
		{"{(1, 2)} == {(1.0, 2.0)}", Set(Tuple(Int(1), Int(2))), Set(Tuple(Float(1), Float(2))), true},
		{"{(1, 2)} == {(2, 1)}", Set(Tuple(Int(1), Int(2))), Set(Tuple(Int(2), Int(1))), false},
		{"{frozenset({1})} == {frozenset({1.0})}", Set(Frozenset(Int(1))), Set(Frozenset(Float(1))), true},
		{"{'ab' * 4096} == {'ab' * 4096}", Set(Str(long)), Set(Str(long)), true},
		{"set() == frozenset()", Set(), Frozenset(), true},
		{"set() == []", Set(), List(), false},
		{"{0.5, -0.0} == {0, 0.5}", Set(Float(0.5), Float(math.Copysign(0, -1))), Set(Int(0), Float(0.5)), true},
		{"{float('nan')} == {float('nan')}", Set(Float(math.NaN())), Set(Float(math.NaN())), false},
		{"{'a': 1} == {'a': 1.0}", Dict(Str("a"), Int(1)), Dict(Str("a"), Float(1)), true},
		{"{'a': 1, 'b': 2} == {'b': 2, 'a': 1}", Dict(Str("a"), Int(1), Str("b"), Int(2)), Dict(Str("b"), Int(2), Str("a"), Int(1)), true},
		{"{'a': 1} == {'a': 2}", Dict(Str("a"), Int(1)), Dict(Str("a"), Int(2)), false},
		{"{'a': 1} == {'b': 1}", Dict(Str("a"), Int(1)), Dict(Str("b"), Int(1)), false},
		{"{1: 'x'} == {True: 'x'}", Dict(Int(1), Str("x")), Dict(Bool(true), Str("x")), true},
		{"{1: 'x'} == {1.0: 'x'}", Dict(Int(1), Str("x")), Dict(Float(1), Str("x")), true},
		{"{(1, 'a'): [1]} == {(1, 'a'): [1]}", Dict(Tuple(Int(1), Str("a")), List(Int(1))), Dict(Tuple(Int(1), Str("a")), List(Int(1))), true},
		{"{1: float('nan')} == {1: float('nan')}", Dict(Int(1), Float(math.NaN())), Dict(Int(1), Float(math.NaN())), false},
		{"{} == {}", Dict(), Dict(), true},
		{"{} == set()", Dict(), Set(), false},
		{"{'a': 1} == [('a', 1)]", Dict(Str("a"), Int(1)), List(Tuple(Str("a"), Int(1))), false},
	}
}

// Wrapped encodes a 'Y' value: a value of the type named name that
// Python compares in mode ('b' as its base type's value inner, 'i' as an
// iterator of the items in the list inner, 'v' as a keys or items view).
func Wrapped(mode byte, name string, inner V) V {
	b := V{'Y', mode}
	b = binary.BigEndian.AppendUint32(b, uint32(len(name)))
	return append(append(b, name...), inner...)
}
