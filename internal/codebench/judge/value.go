package judge

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
)

// The value wire format carries one Python value from a sandboxed process to
// the host as typed plain data. Only the builtin types whose equality repro
// reproduces can be expressed; anything else arrives as an "other" marker
// that never equals anything. Every length is a big-endian uint32.
//
//	'N'                      None
//	'T' / 'F'                True / False
//	'i' len bytes            int, two's complement, big-endian, len >= 1
//	'f' 8 bytes              float, IEEE 754 binary64, big-endian
//	'c' 16 bytes             complex: real, imaginary
//	's' len bytes            str, UTF-8 with surrogates passed through, len <= HashThreshold
//	'h' len sha256           str longer than HashThreshold: its length and SHA-256
//	'b' len bytes            bytes, len <= HashThreshold
//	'H' len sha256           bytes longer than HashThreshold
//	'l' n values             list
//	't' n values             tuple
//	'd' n (key value)...     dict
//	'S' n values             set
//	'Z' n values             frozenset
//	'X' len bytes            any other object: the name of its type, for the report
//	'Y' mode len name value  an object of another type that Python's comparison
//	                         sees as plain data (see below): its mode, the name
//	                         of its type, and that plain data
//	'D' k n size sha256      a large list (k 'l') or tuple (k 't') of n lists and
//	                         tuples, as the length (8 bytes) and SHA-256 of its
//	                         marshal version 2 bytes; only as a whole value
//
// A list or tuple of lists and tuples with more than a million items in all
// (Mbpp/255's expected output has 128 M) travels as a digest ('D'): the
// harness marshals and hashes it a slice at a time, so neither the child
// nor the host holds its encoding, and two such values are equal when their
// digests are (marshal takes exact builtin types only and writes no
// references). Values of equal digests are equal in Python; the converse
// fails only where Python equates different types or float spellings
// inside such a value (1 == True == 1.0, -0.0 == 0.0), see docs/evalplus.md.
//
// A 'Y' value is what EvalPlus's comparison makes of an object that is not
// of an exact builtin type, read by the harness through the base type's own
// slots (numpy's own C methods for numpy), never through a method its class
// can override, so that a class that lies about its equality is judged by
// what it holds. Its mode says how Python compares it:
//
//	'b'  a subclass of a builtin type (OrderedDict, defaultdict, a
//	     namedtuple, a str subclass) or a numpy scalar: == is the base
//	     type's == on the value; its type is its own (type(out) == type(exp)
//	     fails, so a tolerance does not apply to it)
//	'i'  an iterator, a generator, range, dict.values(), a numpy array: ==
//	     is identity (never true across processes); the value is the list of
//	     its items, which set(out) takes
//	'v'  dict.keys() or dict.items(): == is set equality with a set, a
//	     frozenset or another such view; the value is the list of its items
//
// Long strings travel as digests because equality of two str (or bytes)
// values is equality of their encodings, and SHA-256 keeps that without
// moving megabytes: a process that does not know the expected string cannot
// forge its digest.
const (
	tagNone      = 'N'
	tagTrue      = 'T'
	tagFalse     = 'F'
	tagInt       = 'i'
	tagFloat     = 'f'
	tagComplex   = 'c'
	tagStr       = 's'
	tagStrHash   = 'h'
	tagBytes     = 'b'
	tagBytesHash = 'H'
	tagList      = 'l'
	tagTuple     = 't'
	tagDict      = 'd'
	tagSet       = 'S'
	tagFrozenset = 'Z'
	tagOther     = 'X'
	tagDigest    = 'D'
	tagWrapped   = 'Y'
)

// The modes of a 'Y' value.
const (
	wrapBase = 'b'
	wrapIter = 'i'
	wrapView = 'v'
)

// digestLen is the length of a 'D' value.
const digestLen = 1 + 1 + 4 + 8 + 32

// HashThreshold is the longest str or bytes value sent in full; longer ones
// are sent as length and SHA-256. The harness uses the same number.
const HashThreshold = 4096

// Bounds limit what ParseValue accepts.
type Bounds struct {
	MaxDepth    int // nesting of containers
	MaxIntBytes int // bytes of one int
	MaxOther    int // bytes of a type name in an 'X' marker
}

// DefaultBounds are the bounds of every value repro reads: deeper nesting
// or longer ints than any HumanEval+ output by a wide margin.
var DefaultBounds = Bounds{MaxDepth: 64, MaxIntBytes: 1 << 20, MaxOther: 256}

// Value is one encoded value that ParseValue accepted. Its methods assume
// that and never fail.
type Value []byte

// ParseValue checks that b holds exactly one well-formed value within the
// bounds and returns it. It allocates nothing proportional to b.
func ParseValue(b []byte, bd Bounds) (Value, error) {
	end, err := validate(b, 0, 0, bd)
	if err != nil {
		return nil, err
	}
	if end != len(b) {
		return nil, fmt.Errorf("value: %d trailing bytes", len(b)-end)
	}
	return Value(b), nil
}

func u32(b []byte, i int) (int, error) {
	if len(b)-i < 4 {
		return 0, fmt.Errorf("value: truncated length at byte %d", i)
	}
	n := binary.BigEndian.Uint32(b[i:])
	if uint64(n) > uint64(len(b)) {
		return 0, fmt.Errorf("value: length %d at byte %d exceeds the record", n, i)
	}
	return int(n), nil
}

// validate returns the end of the value starting at i.
func validate(b []byte, i, depth int, bd Bounds) (int, error) {
	if i >= len(b) {
		return 0, fmt.Errorf("value: truncated at byte %d", i)
	}
	tag := b[i]
	i++
	need := func(n int) (int, error) {
		if len(b)-i < n {
			return 0, fmt.Errorf("value: truncated %q at byte %d", tag, i)
		}
		return i + n, nil
	}
	switch tag {
	case tagNone, tagTrue, tagFalse:
		return i, nil
	case tagFloat:
		return need(8)
	case tagComplex:
		return need(16)
	case tagInt:
		n, err := u32(b, i)
		if err != nil {
			return 0, err
		}
		if n == 0 || n > bd.MaxIntBytes {
			return 0, fmt.Errorf("value: int of %d bytes at byte %d", n, i)
		}
		i += 4
		return need(n)
	case tagStr, tagBytes:
		n, err := u32(b, i)
		if err != nil {
			return 0, err
		}
		if n > HashThreshold {
			return 0, fmt.Errorf("value: %d-byte string at byte %d sent in full", n, i)
		}
		i += 4
		return need(n)
	case tagStrHash, tagBytesHash:
		if len(b)-i < 4 {
			return 0, fmt.Errorf("value: truncated length at byte %d", i)
		}
		if n := binary.BigEndian.Uint32(b[i:]); n <= HashThreshold {
			return 0, fmt.Errorf("value: %d-byte string at byte %d sent as a digest", n, i)
		}
		i += 4
		return need(32)
	case tagOther:
		n, err := u32(b, i)
		if err != nil {
			return 0, err
		}
		if n > bd.MaxOther {
			return 0, fmt.Errorf("value: type name of %d bytes at byte %d", n, i)
		}
		i += 4
		return need(n)
	case tagWrapped:
		if depth >= bd.MaxDepth {
			return 0, fmt.Errorf("value: nested deeper than %d at byte %d", bd.MaxDepth, i)
		}
		if len(b)-i < 5 {
			return 0, fmt.Errorf("value: truncated %q at byte %d", tag, i)
		}
		mode := b[i]
		if mode != wrapBase && mode != wrapIter && mode != wrapView {
			return 0, fmt.Errorf("value: wrapped value of mode 0x%02x at byte %d", mode, i)
		}
		n, err := u32(b, i+1)
		if err != nil {
			return 0, err
		}
		if n > bd.MaxOther {
			return 0, fmt.Errorf("value: type name of %d bytes at byte %d", n, i)
		}
		i += 5
		if i, err = need(n); err != nil {
			return 0, err
		}
		if i >= len(b) {
			return 0, fmt.Errorf("value: truncated %q at byte %d", tag, i)
		}
		switch inner := b[i]; {
		case mode != wrapBase && inner != tagList:
			return 0, fmt.Errorf("value: wrapped iterable holds 0x%02x at byte %d", inner, i)
		case inner == tagWrapped || inner == tagOther || inner == tagDigest:
			return 0, fmt.Errorf("value: wrapped value holds 0x%02x at byte %d", inner, i)
		}
		return validate(b, i, depth+1, bd)
	case tagDigest:
		if depth != 0 {
			return 0, fmt.Errorf("value: digest inside a container at byte %d", i-1)
		}
		if len(b)-i < digestLen-1 {
			return 0, fmt.Errorf("value: truncated %q at byte %d", tag, i)
		}
		if k := b[i]; k != tagList && k != tagTuple {
			return 0, fmt.Errorf("value: digest of kind 0x%02x at byte %d", k, i)
		}
		return i + digestLen - 1, nil
	case tagList, tagTuple, tagSet, tagFrozenset, tagDict:
		if depth >= bd.MaxDepth {
			return 0, fmt.Errorf("value: nested deeper than %d at byte %d", bd.MaxDepth, i)
		}
		n, err := u32(b, i)
		if err != nil {
			return 0, err
		}
		i += 4
		items := n
		if tag == tagDict {
			items = 2 * n
		}
		if items > len(b)-i { // every item takes at least one byte
			return 0, fmt.Errorf("value: %d items at byte %d exceed the record", n, i)
		}
		for k := 0; k < items; k++ {
			if i, err = validate(b, i, depth+1, bd); err != nil {
				return 0, err
			}
		}
		return i, nil
	}
	return 0, fmt.Errorf("value: unknown tag 0x%02x at byte %d", tag, i-1)
}

// skip returns the end of the (valid) value starting at i.
func skip(b []byte, i int) int {
	tag := b[i]
	i++
	switch tag {
	case tagNone, tagTrue, tagFalse:
		return i
	case tagFloat:
		return i + 8
	case tagComplex:
		return i + 16
	case tagInt, tagStr, tagBytes, tagOther:
		return i + 4 + int(binary.BigEndian.Uint32(b[i:]))
	case tagStrHash, tagBytesHash:
		return i + 4 + 32
	case tagDigest:
		return i + digestLen - 1
	case tagWrapped:
		return skip(b, i+5+int(binary.BigEndian.Uint32(b[i+1:])))
	}
	n := int(binary.BigEndian.Uint32(b[i:]))
	i += 4
	if tag == tagDict {
		n *= 2
	}
	for k := 0; k < n; k++ {
		i = skip(b, i)
	}
	return i
}

// items returns the starts of the n items of the container at i and the
// count field's value; for a dict the items are key, value, key, value, ...
func items(b []byte, i int) []int {
	tag := b[i]
	n := int(binary.BigEndian.Uint32(b[i+1:]))
	if tag == tagDict {
		n *= 2
	}
	out := make([]int, n)
	j := i + 5
	for k := range out {
		out[k] = j
		j = skip(b, j)
	}
	return out
}

// count returns the number of items (pairs for a dict) of a container.
func count(b []byte, i int) int { return int(binary.BigEndian.Uint32(b[i+1:])) }

// Kind returns the Python type name of the value.
func (v Value) Kind() string { return kindName(v, 0) }

func kindName(b []byte, i int) string {
	switch b[i] {
	case tagNone:
		return "NoneType"
	case tagTrue, tagFalse:
		return "bool"
	case tagInt:
		return "int"
	case tagFloat:
		return "float"
	case tagComplex:
		return "complex"
	case tagStr, tagStrHash:
		return "str"
	case tagBytes, tagBytesHash:
		return "bytes"
	case tagList:
		return "list"
	case tagTuple:
		return "tuple"
	case tagDigest:
		if b[i+1] == tagTuple {
			return "tuple"
		}
		return "list"
	case tagDict:
		return "dict"
	case tagSet:
		return "set"
	case tagFrozenset:
		return "frozenset"
	case tagOther:
		n := binary.BigEndian.Uint32(b[i+1:])
		return string(b[i+5 : i+5+int(n)])
	case tagWrapped:
		n := binary.BigEndian.Uint32(b[i+2:])
		return string(b[i+6 : i+6+int(n)])
	}
	return "?"
}

// wrapped returns the mode of the 'Y' value at i and the start of the
// plain data it holds, or 0 and i for any other value.
func wrapped(b []byte, i int) (mode byte, inner int) {
	if b[i] != tagWrapped {
		return 0, i
	}
	return b[i+1], i + 6 + int(binary.BigEndian.Uint32(b[i+2:]))
}

// base returns where the value at i is read as its base type's value: the
// plain data of a 'Y' value of mode 'b', else i.
func base(b []byte, i int) int {
	if mode, inner := wrapped(b, i); mode == wrapBase {
		return inner
	}
	return i
}

// number is a numeric value: an int (small or big), a float, or a complex.
type number struct {
	kind   byte // 'i', 'f' or 'c'
	small  int64
	big    *big.Int // nil when the int fits in small
	f      float64  // the float, or the real part of a complex
	im     float64
	isBool bool
}

// numberAt decodes the number at i, or reports false for a non-number.
func numberAt(b []byte, i int) (number, bool) {
	i = base(b, i)
	switch b[i] {
	case tagTrue:
		return number{kind: 'i', small: 1, isBool: true}, true
	case tagFalse:
		return number{kind: 'i', small: 0, isBool: true}, true
	case tagFloat:
		return number{kind: 'f', f: math.Float64frombits(binary.BigEndian.Uint64(b[i+1:]))}, true
	case tagComplex:
		return number{kind: 'c',
			f:  math.Float64frombits(binary.BigEndian.Uint64(b[i+1:])),
			im: math.Float64frombits(binary.BigEndian.Uint64(b[i+9:]))}, true
	case tagInt:
		n := int(binary.BigEndian.Uint32(b[i+1:]))
		raw := b[i+5 : i+5+n]
		if n <= 8 {
			var x int64
			if raw[0]&0x80 != 0 {
				x = -1
			}
			for _, c := range raw {
				x = x<<8 | int64(c)
			}
			return number{kind: 'i', small: x}, true
		}
		return number{kind: 'i', big: twosComplement(raw)}, true
	}
	return number{}, false
}

// twosComplement decodes a big-endian two's complement integer.
func twosComplement(raw []byte) *big.Int {
	x := new(big.Int).SetBytes(raw)
	if len(raw) > 0 && raw[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(raw))))
	}
	return x
}

// bigInt returns an int number as a big.Int.
func (n number) bigInt() *big.Int {
	if n.big != nil {
		return n.big
	}
	return big.NewInt(n.small)
}

// Bool is the value True or False.
func Bool(b bool) Value {
	if b {
		return Value{tagTrue}
	}
	return Value{tagFalse}
}

// UnknownObject is an "other" marker without a type name: an object the
// harness did not encode, for the oracles that ask only whether an output
// is None.
func UnknownObject() Value { return Value{tagOther, 0, 0, 0, 0} }

// IsNone reports whether v is None.
func (v Value) IsNone() bool { return len(v) == 1 && v[0] == tagNone }

// IsOther reports whether v is an "other" marker: an object that is not
// plain data (a 'Y' value is plain data of another type).
func (v Value) IsOther() bool { return v[0] == tagOther }

// Items returns the items of a list, tuple, set or frozenset v, each a
// value of its own, and nil for any other kind.
func (v Value) Items() []Value {
	switch v[0] {
	case tagList, tagTuple, tagSet, tagFrozenset:
	default:
		return nil
	}
	var out []Value
	for _, p := range items(v, 0) {
		out = append(out, v[p:skip(v, p)])
	}
	return out
}

// Key returns the canonical key of v: values equal in Python have equal
// keys. ok is false where v holds a NaN, an "other" marker, or a set or
// dict with two equal members.
func Key(v Value) (key []byte, ok bool) { return canonKey(v, 0) }
