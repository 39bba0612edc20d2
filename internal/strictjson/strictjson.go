// Package strictjson decodes a document that must be exactly one JSON
// value of a known shape: a field the target does not declare is an
// error, and so is anything but white space after the value. Callers
// bound the size of the bytes before decoding.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// ErrTrailing is returned when something follows the value.
var ErrTrailing = errors.New("trailing data after the value")

// Decode decodes b into v, rejecting unknown fields and trailing data.
func Decode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return ErrTrailing
	}
	return nil
}
