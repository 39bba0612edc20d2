package pickle

import (
	"fmt"
	"strings"
)

// MalformedError reports input that is not a well-formed pickle or torch
// file: an unknown opcode, a length beyond the remaining bytes, a frame that
// lies about its length, trailing data, a limit of the decoder exceeded.
// Commands map it to exit code 4 (integrity).
type MalformedError struct {
	Offset int64  // byte offset in the outermost input, -1 when unknown
	Op     string // opcode name, when the error belongs to one
	Msg    string
}

func (e *MalformedError) Error() string {
	var b strings.Builder
	b.WriteString("malformed pickle")
	if e.Offset >= 0 {
		fmt.Fprintf(&b, " at offset %d", e.Offset)
	}
	if e.Op != "" {
		fmt.Fprintf(&b, " (%s)", e.Op)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Violation is one reason a well-formed file is outside a profile.
type Violation struct {
	Offset int64  `json:"offset"` // byte offset in the outermost input, -1 when not tied to one
	Reason string `json:"reason"`
}

// PolicyError reports a well-formed file that the profile rejects: a global,
// opcode, container or structure it does not allow. Commands map it to exit
// code 1 (negative verdict).
type PolicyError struct {
	Profile    string
	Violations []Violation
}

func (e *PolicyError) Error() string {
	if len(e.Violations) == 0 {
		return fmt.Sprintf("rejected by profile %s", e.Profile)
	}
	v := e.Violations[0]
	msg := fmt.Sprintf("rejected by profile %s: %s", e.Profile, v.Reason)
	if v.Offset >= 0 {
		msg += fmt.Sprintf(" (offset %d)", v.Offset)
	}
	if n := len(e.Violations) - 1; n > 0 {
		msg += fmt.Sprintf(" and %d more", n)
	}
	return msg
}

// InternalError reports a decoder bug caught by recover. It is never an
// acceptance: callers must treat it like a malformed file.
type InternalError struct{ Panic any }

func (e *InternalError) Error() string {
	return fmt.Sprintf("internal error in the pickle decoder (please report): %v", e.Panic)
}
