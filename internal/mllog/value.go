package mllog

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unsafe"
)

// Kind is the type of a JSON value as Python's json module decodes it.
type Kind uint8

const (
	Null   Kind = iota // JSON null (Python None)
	Bool               // true or false
	Int                // a number without fraction or exponent (Python int, any size)
	Float              // a number with fraction or exponent, or NaN/Infinity/-Infinity
	String             // a string
	Array              // an array (Python list)
	Object             // an object (Python dict)
)

var kindNames = [...]string{"null", "bool", "int", "float", "string", "array", "object"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one decoded JSON value from an MLLOG line. It keeps what
// Python's json.loads keeps: integers exactly at any size, floats as
// float64, object members in order (Get returns the last of duplicate
// names, as a Python dict does). The zero Value is null.
type Value struct {
	kind  Kind
	b     bool
	n     uint64   // Int: the int64 bits; Float: the float64 bits
	big   *big.Int // Int that does not fit in int64
	s     string   // String: the Python string in WTF-8; lazy Array or Object: its JSON text
	items []Member // Array elements (names empty) or Object members
}

// A Value read from a log keeps the arrays and objects nested in a
// record's value and metadata as their validated JSON text (items nil,
// s the text), and decodes them again, whole, when they are looked into.
// So a log costs about its own size in memory however it nests, and a
// decoded tree (about 80 bytes per element) lives only while one value
// is looked at.

// lazy reports whether v is an array or object held as text.
func (v Value) lazy() bool { return (v.kind == Array || v.kind == Object) && v.items == nil }

// expand returns v with its elements decoded, when v is lazy. The text
// was validated when the log was parsed, so decoding cannot fail; the
// nesting limit was applied then too.
func (v Value) expand() Value {
	if !v.lazy() {
		return v
	}
	d := &decoder{maxDepth: math.MaxInt32}
	e, err := d.decode(unsafe.Slice(unsafe.StringData(v.s), len(v.s)))
	if err != nil || e.kind != v.kind {
		panic("mllog: a validated value does not decode: " + fmt.Sprint(err))
	}
	return e
}

func (v Value) i() int64   { return int64(v.n) }
func (v Value) f() float64 { return math.Float64frombits(v.n) }

func intValue(i int64) Value     { return Value{kind: Int, n: uint64(i)} }
func floatValue(f float64) Value { return Value{kind: Float, n: math.Float64bits(f)} }

// Member is one name/value pair of a JSON object.
type Member struct {
	Name  string
	Value Value
}

// Kind reports the type of v.
func (v Value) Kind() Kind { return v.kind }

// IsNull reports whether v is JSON null.
func (v Value) IsNull() bool { return v.kind == Null }

// Bool returns the boolean and whether v is a boolean.
func (v Value) Bool() (bool, bool) { return v.b, v.kind == Bool }

// Str returns the string and whether v is a string. Bytes 0x80-0xFF that
// appeared raw in the log are returned as the runes U+0080-U+00FF, the way
// the upstream checker reads files (latin-1).
func (v Value) Str() (string, bool) { return v.s, v.kind == String }

// Int64 returns the integer and whether v is an integer that fits in int64.
func (v Value) Int64() (int64, bool) { return v.i(), v.kind == Int && v.big == nil }

// BigInt returns the integer of an Int value of any size, or nil.
func (v Value) BigInt() *big.Int {
	if v.kind != Int {
		return nil
	}
	if v.big != nil {
		return new(big.Int).Set(v.big)
	}
	return big.NewInt(v.i())
}

// Float64 returns v as a float64 and whether v is a number (Int, Float or
// Bool, as in Python). Integers too large for float64 return ±Inf.
func (v Value) Float64() (float64, bool) {
	switch v.kind {
	case Float:
		return v.f(), true
	case Int:
		if v.big == nil {
			return float64(v.i()), true
		}
		f, _ := new(big.Float).SetInt(v.big).Float64()
		return f, true
	case Bool:
		if v.b {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// Len returns the number of elements of an array or members of an object.
func (v Value) Len() int {
	if v.kind == Array || v.kind == Object {
		return len(v.expand().items)
	}
	return 0
}

// Index returns element i of an array; it panics like a slice index when
// i is out of range or v is not an array. On a value read from a log it
// decodes the array on each call; Elements decodes once.
func (v Value) Index(i int) Value {
	if v.kind != Array {
		panic("mllog: Index of a non-array value")
	}
	return v.expand().items[i].Value
}

// Elements returns the elements of an array, or nil.
func (v Value) Elements() []Value {
	if v.kind != Array {
		return nil
	}
	items := v.expand().items
	out := make([]Value, len(items))
	for i, m := range items {
		out[i] = m.Value
	}
	return out
}

// Members returns the members of an object in file order, duplicates
// included. The slice must not be modified.
func (v Value) Members() []Member {
	if v.kind != Object {
		return nil
	}
	return v.expand().items
}

// Get returns the value of the last member called name, as a Python dict
// lookup would, and whether v is an object that has it.
func (v Value) Get(name string) (Value, bool) {
	if v.kind != Object {
		return Value{}, false
	}
	v = v.expand()
	for i := len(v.items) - 1; i >= 0; i-- {
		if v.items[i].Name == name {
			return v.items[i].Value, true
		}
	}
	return Value{}, false
}

// String renders v as compact JSON. NaN and infinities are written as
// Python writes them (NaN, Infinity, -Infinity), so the text is for
// messages, not for strict JSON consumers; MarshalJSON is.
func (v Value) String() string {
	var b bytes.Buffer
	v.write(&b, false)
	return b.String()
}

// MarshalJSON encodes v as strict JSON: non-finite floats become the
// strings "NaN", "Infinity" and "-Infinity".
func (v Value) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	v.write(&b, true)
	return b.Bytes(), nil
}

func (v Value) write(b *bytes.Buffer, strict bool) {
	v = v.expand()
	switch v.kind {
	case Null:
		b.WriteString("null")
	case Bool:
		b.WriteString(strconv.FormatBool(v.b))
	case Int:
		if v.big != nil {
			b.WriteString(v.big.String())
		} else {
			b.WriteString(strconv.FormatInt(v.i(), 10))
		}
	case Float:
		var t string
		switch f := v.f(); {
		case math.IsNaN(f):
			t = "NaN"
		case math.IsInf(f, 1):
			t = "Infinity"
		case math.IsInf(f, -1):
			t = "-Infinity"
		default:
			b.WriteString(pyFloatRepr(f))
			return
		}
		if strict {
			t = strconv.Quote(t)
		}
		b.WriteString(t)
	case String:
		writeQuoted(b, v.s)
	case Array:
		b.WriteByte('[')
		for i, e := range v.items {
			if i > 0 {
				b.WriteByte(',')
			}
			e.Value.write(b, strict)
		}
		b.WriteByte(']')
	case Object:
		b.WriteByte('{')
		for i, m := range v.items {
			if i > 0 {
				b.WriteByte(',')
			}
			writeQuoted(b, m.Name)
			b.WriteByte(':')
			m.Value.write(b, strict)
		}
		b.WriteByte('}')
	}
}

// writeQuoted writes s as a JSON string in plain ASCII: control
// characters, DEL and every non-ASCII code point are escaped (astral ones
// as surrogate pairs, lone surrogates as themselves), so the text is safe
// to print and decodes back to the same Python string.
func writeQuoted(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	u := func(r rune) {
		b.WriteString(`\u`)
		b.WriteByte(hex[r>>12&0xf])
		b.WriteByte(hex[r>>8&0xf])
		b.WriteByte(hex[r>>4&0xf])
		b.WriteByte(hex[r&0xf])
	}
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c < 0x20 || c == 0x7f:
				u(rune(c))
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, n := decodeWTF8(s[i:])
		switch {
		case r < 0:
			u(0xfffd) // cannot happen for decoded strings
		case r > 0xffff:
			u(0xd800 + (r-0x10000)>>10)
			u(0xdc00 + (r-0x10000)&0x3ff)
		default:
			u(r)
		}
		i += n
	}
	b.WriteByte('"')
}

// kindPhrase names a kind with its article, for messages.
func kindPhrase(k Kind) string {
	switch k {
	case Null:
		return "null"
	case Int, Array, Object:
		return "an " + k.String()
	}
	return "a " + k.String()
}

// pyFloatRepr formats a finite float as Python's repr does, so that it
// always reads back as a float: 100000.0, 0.0001, 1e-05, 1e+16.
func pyFloatRepr(f float64) string {
	if a := math.Abs(f); a == 0 || a >= 1e-4 && a < 1e16 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	return strconv.FormatFloat(f, 'e', -1, 64)
}

// shortText renders validated JSON text for a message without decoding
// it, cut to at most n bytes: whitespace outside strings is dropped and
// bytes outside printable ASCII are escaped (\u00XX, the latin-1 reading
// the decoder applies), so the cost is bounded by n, not by the text.
func shortText(text string, n int) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	inString, escaped := false, false
	for i := 0; i < len(text); i++ {
		if b.Len() >= n-3 {
			return b.String() + "..."
		}
		c := text[i]
		switch {
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			continue
		case c < 0x20 || c >= 0x7f:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
			escaped = false
			continue
		}
		b.WriteByte(c)
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		}
	}
	return b.String()
}
