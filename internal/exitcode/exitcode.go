// Package exitcode defines repro's process exit codes and the error type that
// carries one from deep inside a command up to main.
//
// The codes are a documented contract (README, "Exit codes"); scripts may
// rely on them, and any code not listed here must be treated as failure.
package exitcode

import (
	"errors"
	"fmt"
)

// Code is a process exit status.
type Code int

const (
	// OK: the command did what was asked and every check passed.
	OK Code = 0
	// Negative: the command ran, but its check or verdict was negative
	// (a log is non-compliant, a download failed). A corrupt blob is
	// Integrity, not Negative.
	Negative Code = 1
	// Usage: the command line was wrong; nothing ran.
	Usage Code = 2
	// Precondition: something the command needs is missing (an engine, an
	// asset, a pin, a GPU); nothing ran.
	Precondition Code = 3
	// Integrity: a hash or size mismatch (a corrupt stored blob, which
	// `repro verify` quarantines), tampered input or a failed self-check;
	// results are withheld.
	Integrity Code = 4
)

func (c Code) String() string {
	switch c {
	case OK:
		return "ok"
	case Negative:
		return "negative"
	case Usage:
		return "usage"
	case Precondition:
		return "precondition"
	case Integrity:
		return "integrity"
	}
	return fmt.Sprintf("code(%d)", int(c))
}

// Error is an error that decides the process exit code.
type Error struct {
	Code Code
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// New wraps err so that main exits with code. A nil err stays nil.
func New(code Code, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// Errorf formats an error that makes main exit with code.
func Errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// Of returns the exit code an error stands for: the code of the outermost
// *Error in its chain, Negative for any other non-nil error, OK for nil.
func Of(err error) Code {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Negative
}
