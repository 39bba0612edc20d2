package strictjson

import (
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/go-json-experiment/json/jsontext"
)

// A Stream reads one JSON text from a reader a value at a time, for texts
// too large to hold whole (the results file of a pass@k run holds every
// sample's program). The caller walks the text as its target type would:
// Object where the type is a struct or a map, Array where it is a slice,
// Decode for a value it takes whole and Ignore for a member the struct
// does not declare; then End. Walked so, a text passes every check
// DecodeOpen makes of it decoded into that type at once, and the values
// decoded are those DecodeOpen gives. Only the places named in messages
// differ: a Stream names byte offsets, not lines.
type Stream struct {
	w *walker
}

// NewStream returns a Stream of the JSON text r holds. The caller bounds
// what r yields.
func NewStream(r io.Reader) *Stream {
	dec := jsontext.NewDecoder(r, jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(false))
	return &Stream{w: &walker{dec: dec, stream: true}}
}

// Object reads an object (or null, which has no members) where the
// target's type t is a struct or a map, and calls each with every
// member's name; each must read the member's value, once. As DecodeOpen,
// it refuses two names that differ only in case and, for a struct, a
// name that equals one of its fields but for case. Any other value is
// refused as of the wrong type.
func (s *Stream) Object(t reflect.Type, each func(name string) error) error {
	w := s.w
	var known map[string]reflect.Type
	switch t.Kind() {
	case reflect.Struct:
		known = structFields(t)
	case reflect.Map:
	default:
		return fmt.Errorf("strictjson: Object of %v, not a struct or a map", t)
	}
	ok, err := s.open('{', t)
	if !ok || err != nil {
		return err
	}
	return w.members(map[string]string{}, known, each)
}

// Array reads an array (or null, which has no elements) where the
// target's type t is a slice, and calls each for every element; each
// must read the element, once. Any other value is refused as of the
// wrong type.
func (s *Stream) Array(t reflect.Type, each func() error) error {
	if t.Kind() != reflect.Slice {
		return fmt.Errorf("strictjson: Array of %v, not a slice", t)
	}
	ok, err := s.open('[', t)
	if !ok || err != nil {
		return err
	}
	w := s.w
	for w.dec.PeekKind() != ']' {
		if err := each(); err != nil {
			return err
		}
	}
	if _, err := w.dec.ReadToken(); err != nil {
		return w.syntax(err)
	}
	return nil
}

// open reads the start of an object or array (kind), reporting false for
// a null, and refuses any other value as DecodeOpen's decoder would
// refuse it for type t.
func (s *Stream) open(kind jsontext.Kind, t reflect.Type) (bool, error) {
	w := s.w
	switch k := w.dec.PeekKind(); k {
	case 'n':
		if _, err := w.dec.ReadToken(); err != nil {
			return false, w.syntax(err)
		}
		return false, nil
	case kind:
		if w.dec.StackDepth() >= MaxDepth {
			return false, w.fail("", "more than %d levels of nesting at %s", MaxDepth, w.where(w.dec.StackPointer(), w.dec.StackDepth()))
		}
		if _, err := w.dec.ReadToken(); err != nil {
			return false, w.syntax(err)
		}
		return true, nil
	case 0:
		// Not a value: the token reader says why.
		_, err := w.dec.ReadToken()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return false, w.syntax(err)
	default:
		// Read it whole first, so that a value broken further in is
		// refused for that, as the whole text's walk would.
		off := w.dec.InputOffset()
		if err := w.value(nil); err != nil {
			return false, err
		}
		return false, w.errorAt(off, "", "cannot decode a JSON %s at %s into a Go value of type %v", kindName(k), w.here(), t)
	}
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "bool"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "value"
}

// Decode reads the next value whole and decodes it into v as DecodeOpen
// would decode it there.
func (s *Stream) Decode(v any) error {
	w := s.w
	depth := w.dec.StackDepth()
	raw, err := w.dec.ReadValue()
	if err != nil {
		return w.syntax(err)
	}
	off := w.dec.InputOffset() - int64(len(raw))
	if err := decodeAt(raw, v, false, depth); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return &Error{Key: e.Key, Msg: fmt.Sprintf("the value at byte %d: %s", off, e.Msg)}
		}
		return fmt.Errorf("the value at byte %d: %w", off, err)
	}
	return nil
}

// Null reports whether the next value is null, without reading it.
func (s *Stream) Null() bool { return s.w.dec.PeekKind() == 'n' }

// Ignore reads the next value, a member the target does not declare, with
// the checks DecodeOpen makes of such a member.
func (s *Stream) Ignore() error { return s.w.value(nil) }

// End reads what follows the value: white space only, else ErrTrailing.
func (s *Stream) End() error {
	if _, err := s.w.dec.ReadToken(); err != io.EOF {
		return ErrTrailing
	}
	return nil
}
