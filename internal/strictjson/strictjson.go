// Package strictjson is repro's one decoder of JSON it did not just write
// itself: samples files, shard records and results, configs, manifests,
// trust files, whatever a container prints. It reads a member only under
// its exact name, as Python's json and every EvalPlus reader do, where
// encoding/json would match names ignoring case and keep the last of two
// equal ones. A text is refused, with the line and the key, when
//
//   - one object names a member twice, or, where the target's type names
//     the members (a struct, a map), two members whose names differ only
//     in case;
//   - a member's name equals, but for case, a field the target declares
//     (another reader could take it for that field);
//   - it nests deeper than MaxDepth, or holds an integer of more than
//     MaxIntDigits digits (Python's json refuses both);
//   - it is not valid UTF-8, has a lone surrogate escape, or has anything
//     but white space after the value.
//
// Decode also refuses a member the target does not declare; DecodeOpen
// ignores it, as EvalPlus ignores the extra keys of a sample. Otherwise
// values decode as encoding/json decodes them. The decoder is
// github.com/go-json-experiment/json (the encoding/json/v2 prototype) with
// encoding/json's options but exact names, no duplicate names and strict
// UTF-8. Callers bound the size of the bytes before decoding. A Stream
// makes the same checks of a text read a value at a time, for one too
// large to hold.
package strictjson

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// ErrTrailing is returned when something follows the value.
var ErrTrailing = errors.New("trailing data after the value")

// Bounds Python's json sets on what it reads: it raises RecursionError
// near 1000 levels (earlier when called deep in a program) and refuses an
// integer of more than 4300 digits (sys.get_int_max_str_digits()).
const (
	MaxDepth     = 512
	MaxIntDigits = 4300
)

// Error is a text refused by the checks, at a line of the input.
type Error struct {
	Line int    // 1-based
	Key  string // the member concerned, "" for a syntax error
	Msg  string

	multiline bool // the input has more than one line: name the line
}

func (e *Error) Error() string {
	if e.multiline {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// Decode decodes b into v, refusing unknown members, trailing data and
// everything the package doc lists.
func Decode(b []byte, v any) error { return decode(b, v, true) }

// DecodeOpen decodes b into v like Decode, but ignores members the target
// does not declare (a name that differs from a declared one only in case
// is still an error).
func DecodeOpen(b []byte, v any) error { return decode(b, v, false) }

func decode(b []byte, v any, closed bool) error { return decodeAt(b, v, closed, 0) }

// decodeAt decodes b, a value depth levels deep in a larger text (0: the
// whole text).
func decodeAt(b []byte, v any, closed bool, depth int) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("strictjson: decode into %T, not a non-nil pointer", v)
	}
	w := &walker{src: b, closed: closed, multiline: bytes.IndexByte(bytes.TrimRight(b, " \t\r\n"), '\n') >= 0, depth: depth}
	w.dec = jsontext.NewDecoder(bytes.NewReader(b), jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(false))
	walk := func() error {
		if err := w.value(rv.Type().Elem()); err != nil {
			return err
		}
		if _, err := w.dec.ReadToken(); err != io.EOF {
			return ErrTrailing
		}
		return nil
	}
	// A target with nothing to walk (a string, raw JSON) is read once,
	// and walked only to name what the decoder refused.
	self := selfDecoding(rv.Type().Elem())
	if !self {
		if err := walk(); err != nil {
			return err
		}
	}
	if err := jsonv2.Unmarshal(b, v, decodeOptions(closed)); err != nil {
		if self {
			if werr := walk(); werr != nil {
				return werr
			}
		}
		return w.semantic(err)
	}
	return nil
}

var (
	openOptions   = jsonv2.JoinOptions(jsonv1.DefaultOptionsV1(), jsonv2.MatchCaseInsensitiveNames(false), jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(false))
	closedOptions = jsonv2.JoinOptions(openOptions, jsonv2.RejectUnknownMembers(true))
)

func decodeOptions(closed bool) jsonv2.Options {
	if closed {
		return closedOptions
	}
	return openOptions
}

// walker reads the text token by token beside the target's type, before
// anything is decoded. Its token reader refuses equal names in any
// object, invalid UTF-8 and lone surrogates; the walker adds the rest.
type walker struct {
	src       []byte
	dec       *jsontext.Decoder
	closed    bool
	multiline bool
	// depth is how deep in a larger text the value walked lies (a
	// Stream's value); stream: the walker reads a Stream, whose text it
	// does not hold, and names places by their byte offsets.
	depth  int
	stream bool
}

func (w *walker) errorAt(off int64, key, format string, args ...any) error {
	if w.stream {
		return &Error{Key: key, Msg: fmt.Sprintf("byte %d: ", off) + fmt.Sprintf(format, args...)}
	}
	o := min(max(int(off), 0), len(w.src))
	return &Error{Line: 1 + bytes.Count(w.src[:o], []byte("\n")), Key: key, Msg: fmt.Sprintf(format, args...), multiline: w.multiline}
}

func (w *walker) fail(key, format string, args ...any) error {
	return w.errorAt(w.dec.InputOffset(), key, format, args...)
}

// where names, for messages, the value that the first n tokens of p
// point to: "the top level", "volumes.output", "tests[]".
func (w *walker) where(p jsontext.Pointer, n int) string {
	var b strings.Builder
	i := 0
	for tok := range p.Tokens() {
		if i++; i > n {
			break
		}
		if k, _ := w.dec.StackIndex(i); k == '[' {
			b.WriteString("[]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	if b.Len() == 0 {
		return "the top level"
	}
	return clip(b.String())
}

// here names the value just read.
func (w *walker) here() string { return w.where(w.dec.StackPointer(), w.dec.StackDepth()) }

// syntax turns an error of the token reader into an Error at its line.
func (w *walker) syntax(err error) error {
	var se *jsontext.SyntacticError
	switch {
	case err == io.EOF && w.dec.InputOffset() == 0:
		return w.fail("", "no JSON value (EOF)")
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return w.fail("", "unexpected EOF")
	case errors.As(err, &se) && se.Err == jsontext.ErrDuplicateName:
		name := se.JSONPointer.LastToken()
		at := w.where(se.JSONPointer, w.dec.StackDepth()-1)
		return w.errorAt(se.ByteOffset, name, "key %q appears twice in the object at %s: remove one (a JSON reader would keep either)", clip(name), at)
	case errors.As(err, &se):
		return w.errorAt(se.ByteOffset, "", "%s", strings.TrimPrefix(se.Err.Error(), "jsontext: "))
	}
	return w.fail("", "%v", err)
}

// semantic names the line of an error of the decoder (a value of the
// wrong type), where it says the offset.
func (w *walker) semantic(err error) error {
	var te *jsonv1.UnmarshalTypeError
	if errors.As(err, &te) && te.Offset > 0 {
		return w.errorAt(te.Offset, te.Field, "%s", err.Error())
	}
	return err
}

// value reads one value whose Go type is t.
func (w *walker) value(t reflect.Type) error {
	t, self := declared(t)
	if self {
		// The type decodes itself (a digest, a time, raw JSON that is
		// decoded later): the token reader's checks are enough.
		if err := w.dec.SkipValue(); err != nil {
			return w.syntax(err)
		}
		return nil
	}
	switch k := w.dec.PeekKind(); k {
	case '{', '[':
		if w.dec.StackDepth()+w.depth >= MaxDepth {
			return w.fail("", "more than %d levels of nesting at %s", MaxDepth, w.where(w.dec.StackPointer(), w.dec.StackDepth()))
		}
		if _, err := w.dec.ReadToken(); err != nil {
			return w.syntax(err)
		}
		if k == '[' {
			return w.array(t)
		}
		return w.object(t)
	case '0':
		v, err := w.dec.ReadValue()
		if err != nil {
			return w.syntax(err)
		}
		if n := digits(v); n > MaxIntDigits {
			return w.fail("", "an integer of %d digits at %s; Python reads at most %d", n, w.here(), MaxIntDigits)
		}
		return nil
	default:
		if _, err := w.dec.ReadToken(); err != nil {
			return w.syntax(err)
		}
		return nil
	}
}

func (w *walker) array(t reflect.Type) error {
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	for w.dec.PeekKind() != ']' {
		if err := w.value(elem); err != nil {
			return err
		}
	}
	if _, err := w.dec.ReadToken(); err != nil {
		return w.syntax(err)
	}
	return nil
}

func (w *walker) object(t reflect.Type) error {
	var known map[string]reflect.Type
	var elem reflect.Type
	switch {
	case t == nil:
	case t.Kind() == reflect.Struct:
		known = structFields(t)
	case t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	// Where the type names the members (a struct's fields, a map's keys),
	// two names that differ only in case are refused; in a value it
	// leaves open (any, or a member the struct does not declare: data
	// such as a test input) only equal names are, by the token reader.
	var seen map[string]string // folded name -> name as written
	if t != nil && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map) {
		seen = map[string]string{}
	}
	return w.members(seen, known, func(name string) error {
		switch ft, ok := known[name]; {
		case ok:
			elem = ft
		case known != nil:
			if w.closed {
				return w.fail(name, "unknown field %q in the object at %s", clip(name), w.where(w.dec.StackPointer(), w.dec.StackDepth()-1))
			}
			elem = nil
		}
		return w.value(elem)
	})
}

// members reads the members of an object whose '{' was read, to its
// '}': each name, checked (name), then each, which reads its value.
func (w *walker) members(seen map[string]string, known map[string]reflect.Type, each func(name string) error) error {
	for w.dec.PeekKind() != '}' {
		tok, err := w.dec.ReadToken()
		if err != nil {
			return w.syntax(err)
		}
		name := tok.String()
		if err := w.name(name, seen, known); err != nil {
			return err
		}
		if err := each(name); err != nil {
			return err
		}
	}
	if _, err := w.dec.ReadToken(); err != nil {
		return w.syntax(err)
	}
	return nil
}

// name checks the name of a member just read, of an object whose
// members the target's type names where seen is not nil (folded name to
// name as written, of the members before it): no two names that differ
// only in case, and, where known holds a struct's fields, no name equal
// to one of them but for case.
func (w *walker) name(name string, seen map[string]string, known map[string]reflect.Type) error {
	if seen != nil {
		folded := fold(name)
		if prev, dup := seen[folded]; dup {
			return w.fail(name, "keys %q and %q of the object at %s differ only in case: keep one", clip(prev), clip(name), w.where(w.dec.StackPointer(), w.dec.StackDepth()-1))
		}
		seen[folded] = name
	}
	if _, ok := known[name]; !ok {
		for k := range known {
			if strings.EqualFold(k, name) {
				return w.fail(name, "key %q of the object at %s differs only in case from the field %q: write %q", clip(name), w.where(w.dec.StackPointer(), w.dec.StackDepth()-1), k, k)
			}
		}
	}
	return nil
}

// digits counts the digits of an integer literal (0 for one with a
// fraction or an exponent, which Python reads as a float).
func digits(num []byte) int {
	if bytes.ContainsAny(num, ".eE") {
		return 0
	}
	return len(bytes.TrimPrefix(num, []byte("-")))
}

var (
	unmarshalerType     = reflect.TypeFor[jsonv1.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	rawType             = reflect.TypeFor[jsontext.Value]()
)

// declared returns the type whose fields and elements the JSON value
// fills, nil where the type says nothing of them (an interface, or no
// type: a member the struct does not declare), and whether the type
// decodes itself.
func declared(t reflect.Type) (reflect.Type, bool) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == nil || t.Kind() == reflect.Interface:
		return nil, false
	case t == rawType || reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType):
		return nil, true
	}
	return t, false
}

// selfDecoding reports whether a value of type t holds nothing the walk
// checks (a string, raw JSON, a list of them): the decoder's own checks
// (syntax, equal names, UTF-8, trailing data) are all there are.
func selfDecoding(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice && t != rawType && !reflect.PointerTo(t).Implements(unmarshalerType) {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool:
		return true
	}
	_, self := declared(t)
	return self
}

var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// structFields returns the JSON names of a struct's fields and their
// types, by encoding/json's rules: the tag's name or the field's,
// "-" skipped, untagged embedded structs inlined (outer names first).
func structFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = f.Type
	}
	for _, et := range embedded {
		for name, ft := range structFields(et) {
			if _, ok := m[name]; !ok {
				m[name] = ft
			}
		}
	}
	fieldCache.Store(t, m)
	return m
}

// fold maps the names that strings.EqualFold (and encoding/json's name
// matching) takes for equal to one string.
func fold(s string) string {
	var b strings.Builder
	for _, r := range s {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// clip shortens a name for a message.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
