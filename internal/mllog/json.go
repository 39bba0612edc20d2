package mllog

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"unicode/utf8"
)

// The decoder below accepts exactly the JSON texts that Python's
// json.loads accepts (the language the upstream checker parses MLLOG lines
// with): RFC 8259 plus the literals NaN, Infinity and -Infinity, integers
// of any size up to Python's 4300-digit conversion limit, and lone UTF-16
// surrogates in \u escapes. It is a hand-written scanner rather than
// encoding/json because encoding/json rejects NaN, loses integers above
// 2^53 when decoding into interfaces, and keeps no member order.

// maxIntDigits is CPython's default int_max_str_digits (3.11+): json.loads
// raises ValueError for longer integer literals.
const maxIntDigits = 4300

// jsonError is a syntax error at a byte offset of the JSON text.
type jsonError struct {
	off int
	msg string
}

func (e *jsonError) Error() string { return fmt.Sprintf("%s at offset %d", e.msg, e.off) }

var errDepth = errors.New("nesting too deep")

// decoder scans one JSON text.
type decoder struct {
	buf      []byte
	pos      int
	depth    int
	maxDepth int

	// stack holds the members of the objects and arrays being decoded;
	// each is copied out at its end into a slice of exactly its size.
	stack []Member
	arena []Member
	// viewTop makes decode return a top-level object whose members are a
	// view of the stack, valid only until the next decode.
	viewTop bool
	// lazy makes the arrays and objects below the top level come back
	// as their validated text (see Value), not as trees: a tree costs
	// about 80 bytes per element, and a hostile log spends 2 bytes on
	// one ("[]"). skip counts the enclosing containers being validated
	// without being built.
	lazy bool
	skip int
	// intern maps short strings seen before to one shared copy: logs
	// repeat the same names, file paths and event types on every line.
	intern map[string]string
	// devs shares the deviation messages of a log's records.
	devs    map[string]string
	devSets map[string][]string

	// What a strict reading of the MLLOG format would reject but Python
	// accepts; the parser turns these into format deviations.
	nonFinite  bool // NaN, Infinity or -Infinity appeared
	duplicates bool // an object had the same member name twice
}

// decodeJSON decodes buf as one JSON text, the way json.loads does.
func decodeJSON(buf []byte, maxDepth int) (Value, *decoder, error) {
	d := &decoder{maxDepth: maxDepth}
	v, err := d.decode(buf)
	return v, d, err
}

// decode decodes buf as one JSON text. A decoder may be reused for many
// texts (one per log line): only the strict-reading flags are reset.
func (d *decoder) decode(buf []byte) (Value, error) {
	clear(d.stack)
	d.stack = d.stack[:0]
	d.buf, d.pos, d.depth = buf, 0, 0
	d.nonFinite, d.duplicates = false, false
	d.skipSpace()
	v, err := d.value()
	if err != nil {
		d.stack = d.stack[:0]
		return Value{}, err
	}
	d.skipSpace()
	if d.pos != len(d.buf) {
		return Value{}, d.errorf("extra data")
	}
	return v, nil
}

func (d *decoder) errorf(format string, args ...any) error {
	return &jsonError{off: d.pos, msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.buf) {
		switch d.buf[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) literal(word string) bool {
	if len(d.buf)-d.pos >= len(word) && string(d.buf[d.pos:d.pos+len(word)]) == word {
		d.pos += len(word)
		return true
	}
	return false
}

func (d *decoder) value() (Value, error) {
	if d.pos >= len(d.buf) {
		return Value{}, d.errorf("expecting value")
	}
	switch c := d.buf[d.pos]; c {
	case '{', '[':
		if d.lazy && d.skip == 0 && d.depth >= 1 {
			return d.lazyContainer()
		}
		if c == '{' {
			return d.object()
		}
		return d.array()
	case '"':
		s, err := d.str()
		return Value{kind: String, s: s}, err
	case 'n':
		if d.literal("null") {
			return Value{}, nil
		}
	case 't':
		if d.literal("true") {
			return Value{kind: Bool, b: true}, nil
		}
	case 'f':
		if d.literal("false") {
			return Value{kind: Bool}, nil
		}
	case 'N':
		if d.literal("NaN") {
			d.nonFinite = true
			return floatValue(math.NaN()), nil
		}
	case 'I':
		if d.literal("Infinity") {
			d.nonFinite = true
			return floatValue(math.Inf(1)), nil
		}
	case '-':
		if d.literal("-Infinity") {
			d.nonFinite = true
			return floatValue(math.Inf(-1)), nil
		}
		return d.number()
	default:
		if c >= '0' && c <= '9' {
			return d.number()
		}
	}
	return Value{}, d.errorf("expecting value")
}

// lazyContainer validates the array or object at d.pos without building
// it and returns it as a lazy Value holding its text.
func (d *decoder) lazyContainer() (Value, error) {
	start := d.pos
	d.skip++
	var v Value
	var err error
	if d.buf[d.pos] == '{' {
		v, err = d.object()
	} else {
		v, err = d.array()
	}
	d.skip--
	if err != nil {
		return Value{}, err
	}
	return Value{kind: v.kind, s: string(d.buf[start:d.pos])}, nil
}

func (d *decoder) enter() error {
	d.depth++
	if d.depth > d.maxDepth {
		return &jsonError{off: d.pos, msg: fmt.Sprintf("%v (more than %d levels)", errDepth, d.maxDepth)}
	}
	return nil
}

func (d *decoder) object() (Value, error) {
	if err := d.enter(); err != nil {
		return Value{}, err
	}
	d.pos++ // '{'
	base := len(d.stack)
	var names map[string]struct{} // for duplicate detection in large objects
	d.skipSpace()
	if d.pos < len(d.buf) && d.buf[d.pos] == '}' {
		d.pos++
		d.depth--
		return Value{kind: Object, items: []Member{}}, nil
	}
	for {
		if d.pos >= len(d.buf) || d.buf[d.pos] != '"' {
			return Value{}, d.errorf("expecting property name enclosed in double quotes")
		}
		name, err := d.str()
		if err != nil {
			return Value{}, err
		}
		d.skipSpace()
		if d.pos >= len(d.buf) || d.buf[d.pos] != ':' {
			return Value{}, d.errorf("expecting ':' delimiter")
		}
		d.pos++
		d.skipSpace()
		v, err := d.value()
		if err != nil {
			return Value{}, err
		}
		if !d.duplicates {
			if n := len(d.stack) - base; n < 16 {
				for i := base; i < len(d.stack); i++ {
					if d.stack[i].Name == name {
						d.duplicates = true
						break
					}
				}
			} else {
				if names == nil {
					names = make(map[string]struct{}, 2*n)
					for _, m := range d.stack[base:] {
						names[m.Name] = struct{}{}
					}
				}
				if _, dup := names[name]; dup {
					d.duplicates = true
				}
				names[name] = struct{}{}
			}
		}
		if d.skip > 0 {
			v = Value{}
		}
		d.stack = append(d.stack, Member{Name: name, Value: v})
		closed, err := d.separator('}')
		if err != nil {
			return Value{}, err
		}
		if !closed {
			continue
		}
		if d.skip > 0 {
			// Validated only: the names were kept for duplicate
			// detection.
			clear(d.stack[base:])
			d.stack = d.stack[:base]
			return Value{kind: Object}, nil
		}
		if d.depth == 0 && d.viewTop {
			// The caller reads the top-level members before the next
			// decode; they stay on the stack.
			return Value{kind: Object, items: d.stack[base:len(d.stack):len(d.stack)]}, nil
		}
		return Value{kind: Object, items: d.pop(base)}, nil
	}
}

// separator reads what follows a member or element: ',' (closed is false)
// or the container's closing byte (closed is true, and the depth drops).
func (d *decoder) separator(closing byte) (closed bool, err error) {
	d.skipSpace()
	if d.pos < len(d.buf) {
		switch d.buf[d.pos] {
		case ',':
			d.pos++
			d.skipSpace()
			return false, nil
		case closing:
			d.pos++
			d.depth--
			return true, nil
		}
	}
	return false, d.errorf("expecting ',' delimiter")
}

// pop removes the members above base from the stack and returns them in
// a slice of their own, carved from a block shared with other values of
// the same log (fewer, larger allocations).
func (d *decoder) pop(base int) []Member {
	n := len(d.stack) - base
	if cap(d.arena)-len(d.arena) < n {
		// A text of b bytes holds at most b/2 elements.
		d.arena = make([]Member, 0, max(min(arenaBlock, len(d.buf)/2+1), n))
	}
	start := len(d.arena)
	d.arena = append(d.arena, d.stack[base:]...)
	clear(d.stack[base:])
	d.stack = d.stack[:base]
	return d.arena[start : start+n : start+n]
}

// arenaBlock is the number of members allocated at once by pop.
const arenaBlock = 1024

func (d *decoder) array() (Value, error) {
	if err := d.enter(); err != nil {
		return Value{}, err
	}
	d.pos++ // '['
	base := len(d.stack)
	d.skipSpace()
	if d.pos < len(d.buf) && d.buf[d.pos] == ']' {
		d.pos++
		d.depth--
		return Value{kind: Array, items: []Member{}}, nil
	}
	for {
		v, err := d.value()
		if err != nil {
			return Value{}, err
		}
		if d.skip == 0 {
			d.stack = append(d.stack, Member{Value: v})
		}
		closed, err := d.separator(']')
		if err != nil {
			return Value{}, err
		}
		if !closed {
			continue
		}
		if d.skip > 0 {
			return Value{kind: Array}, nil
		}
		return Value{kind: Array, items: d.pop(base)}, nil
	}
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)? like
// Python's scanner: without fraction and exponent it is an int.
func (d *decoder) number() (Value, error) {
	start := d.pos
	if d.buf[d.pos] == '-' {
		d.pos++
	}
	digits := d.pos
	if d.pos >= len(d.buf) || d.buf[d.pos] < '0' || d.buf[d.pos] > '9' {
		return Value{}, d.errorf("expecting value")
	}
	if d.buf[d.pos] == '0' {
		d.pos++
	} else {
		for d.pos < len(d.buf) && d.buf[d.pos] >= '0' && d.buf[d.pos] <= '9' {
			d.pos++
		}
	}
	intEnd := d.pos
	isFloat := false
	if d.pos+1 < len(d.buf) && d.buf[d.pos] == '.' && d.buf[d.pos+1] >= '0' && d.buf[d.pos+1] <= '9' {
		isFloat = true
		d.pos += 2
		for d.pos < len(d.buf) && d.buf[d.pos] >= '0' && d.buf[d.pos] <= '9' {
			d.pos++
		}
	}
	if d.pos < len(d.buf) && (d.buf[d.pos] == 'e' || d.buf[d.pos] == 'E') {
		p := d.pos + 1
		if p < len(d.buf) && (d.buf[p] == '+' || d.buf[p] == '-') {
			p++
		}
		if p < len(d.buf) && d.buf[p] >= '0' && d.buf[p] <= '9' {
			isFloat = true
			for p < len(d.buf) && d.buf[p] >= '0' && d.buf[p] <= '9' {
				p++
			}
			d.pos = p
		}
	}
	if !isFloat && intEnd-digits <= 18 {
		var i int64
		for _, c := range d.buf[digits:intEnd] {
			i = i*10 + int64(c-'0')
		}
		if digits > start {
			i = -i
		}
		return intValue(i), nil
	}
	text := string(d.buf[start:d.pos])
	if isFloat {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return Value{}, &jsonError{off: start, msg: "bad number"}
		}
		return floatValue(f), nil
	}
	if intEnd-digits > maxIntDigits {
		return Value{}, &jsonError{off: start, msg: fmt.Sprintf("integer longer than %d digits", maxIntDigits)}
	}
	if i, err := strconv.ParseInt(text, 10, 64); err == nil {
		return intValue(i), nil
	}
	n, ok := new(big.Int).SetString(text, 10)
	if !ok {
		return Value{}, &jsonError{off: start, msg: "bad number"}
	}
	return Value{kind: Int, big: n}, nil
}

// maxIntern is the longest string the decoder shares between lines.
const maxIntern = 128

// internBytes returns b as a string, shared with earlier equal strings
// when it is short.
func (d *decoder) internBytes(b []byte) string {
	if len(b) > maxIntern {
		return string(b)
	}
	if s, ok := d.intern[string(b)]; ok {
		return s
	}
	if d.intern == nil {
		d.intern = make(map[string]string)
	}
	s := string(b)
	if len(d.intern) < 1<<14 {
		d.intern[s] = s
	}
	return s
}

// str scans a string at d.pos (which holds '"') and returns its content
// as WTF-8: raw bytes 0x80-0xFF become U+0080-U+00FF (the upstream checker
// reads logs as latin-1), escapes are decoded, surrogate pairs combined,
// and lone surrogates kept as their generalized UTF-8 encoding so that
// two different Python strings never compare equal here.
func (d *decoder) str() (string, error) {
	d.pos++ // opening quote
	start := d.pos
	// Fast path: printable ASCII without escapes.
	for d.pos < len(d.buf) {
		c := d.buf[d.pos]
		if c == '"' {
			s := d.internBytes(d.buf[start:d.pos])
			d.pos++
			return s, nil
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			break
		}
		d.pos++
	}
	out := make([]byte, 0, d.pos-start+16)
	out = append(out, d.buf[start:d.pos]...)
	for {
		if d.pos >= len(d.buf) {
			return "", &jsonError{off: start - 1, msg: "unterminated string"}
		}
		c := d.buf[d.pos]
		switch {
		case c == '"':
			d.pos++
			return string(out), nil
		case c < 0x20:
			return "", d.errorf("invalid control character in string")
		case c >= 0x80:
			out = utf8.AppendRune(out, rune(c))
			d.pos++
		case c != '\\':
			out = append(out, c)
			d.pos++
		default:
			d.pos++
			if d.pos >= len(d.buf) {
				return "", &jsonError{off: start - 1, msg: "unterminated string"}
			}
			e := d.buf[d.pos]
			d.pos++
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := d.hex4(d.pos)
				if !ok {
					return "", d.errorf("invalid \\uXXXX escape")
				}
				d.pos += 4
				if r >= 0xd800 && r <= 0xdbff && d.pos+6 <= len(d.buf) && d.buf[d.pos] == '\\' && d.buf[d.pos+1] == 'u' {
					if r2, ok := d.hex4(d.pos + 2); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
						r = 0x10000 + (r-0xd800)<<10 + (r2 - 0xdc00)
						d.pos += 6
					}
				}
				out = appendWTF8(out, r)
			default:
				d.pos -= 2
				return "", d.errorf("invalid \\escape")
			}
		}
	}
}

func (d *decoder) hex4(p int) (rune, bool) {
	if p+4 > len(d.buf) {
		return 0, false
	}
	var r rune
	for _, c := range d.buf[p : p+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// appendWTF8 appends r in UTF-8, encoding surrogates (which UTF-8 forbids)
// with the same three-byte pattern as other BMP code points.
func appendWTF8(b []byte, r rune) []byte {
	if r >= 0xd800 && r <= 0xdfff {
		return append(b, 0xe0|byte(r>>12), 0x80|byte(r>>6)&0x3f, 0x80|byte(r)&0x3f)
	}
	return utf8.AppendRune(b, r)
}

// decodeWTF8 decodes the first code point of s, accepting encoded
// surrogates. It returns -1 and 1 for a byte that starts no valid sequence.
func decodeWTF8(s string) (rune, int) {
	if len(s) >= 3 && s[0] == 0xed && s[1] >= 0xa0 && s[1] <= 0xbf && s[2]&0xc0 == 0x80 {
		return rune(s[0]&0x0f)<<12 | rune(s[1]&0x3f)<<6 | rune(s[2]&0x3f), 3
	}
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && n <= 1 {
		return -1, 1
	}
	return r, n
}
