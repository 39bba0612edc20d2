package ui

import (
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// OneLine returns s with every character that could drive a terminal or
// change what it shows written as a Go escape: control characters (C0
// with newline and carriage return, DEL, C1 with NEL and CSI), the
// bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E,
// U+2066-U+2069), the line and paragraph separators, and invalid bytes.
// It is the one escaping function for outside text (file names, sample
// ids, pickle names, log values, reasons, what a container printed) on
// human output: a message that carries it stays one line and cannot clear
// the screen, move the cursor, set the title or reorder the text.
func OneLine(s string) string { return escape(s, false) }

// unsafeRune reports whether r is escaped by OneLine.
func unsafeRune(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidirectional controls
	case r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// escape is OneLine; with lines it keeps newlines and tabs, for text that
// is laid out in lines by repro itself.
func escape(s string, lines bool) string {
	keep := func(r rune) bool { return lines && (r == '\n' || r == '\t') }
	clean := true
	for _, r := range s {
		if (r == utf8.RuneError || unsafeRune(r)) && !keep(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && strings.HasPrefix(s[i:], "\ufffd"):
			b.WriteRune(r)
		case r == utf8.RuneError:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i]), 16))
		case unsafeRune(r) && !keep(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// textWriter escapes, in each Write, every character OneLine escapes but
// newlines and tabs: what a text report writes reaches the terminal as
// text, whichever of its strings a report forgot to pass through Fprintf.
type textWriter struct{ w io.Writer }

func (t textWriter) Write(p []byte) (int, error) {
	s := escape(string(p), true)
	if len(s) == len(p) {
		return t.w.Write(p)
	}
	if _, err := io.WriteString(t.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Fprintf is the printer of text reports. It formats like fmt.Fprintf,
// but the format is repro's and every string it is given (a string or a
// string type, an error, a Stringer, a []string) is outside text: with %s
// and %v it is written through OneLine, so that it can neither drive the
// terminal nor start a line; with %q it is quoted as Go quotes it (which
// escapes the same characters). Text reports write with Fprintf, never
// with fmt's printers.
func Fprintf(w io.Writer, format string, args ...any) (int, error) {
	safe := make([]any, len(args))
	for i, a := range args {
		safe[i] = outside(a)
	}
	return fmt.Fprintf(w, format, safe...)
}

// outsideText is a string argument of Fprintf; orig is the argument as
// given, for verbs that do not print it as text (%d of a Duration).
type outsideText struct {
	s    string
	orig any
}

func (o outsideText) Format(f fmt.State, verb rune) {
	switch verb {
	case 's', 'v':
		fmt.Fprintf(f, fmt.FormatString(f, verb), OneLine(o.s))
	case 'q':
		fmt.Fprintf(f, fmt.FormatString(f, verb), o.s)
	default:
		fmt.Fprintf(f, fmt.FormatString(f, verb), o.orig)
	}
}

func outside(a any) any {
	switch v := a.(type) {
	case nil:
		return nil
	case string:
		return outsideText{v, v}
	case []string:
		out := make([]outsideText, len(v))
		for i, s := range v {
			out[i] = outsideText{s, s}
		}
		return out
	case error:
		return outsideText{v.Error(), v}
	case fmt.Stringer:
		return outsideText{v.String(), v}
	}
	if rv := reflect.ValueOf(a); rv.Kind() == reflect.String {
		return outsideText{rv.String(), a}
	}
	return a
}

// escapeJSON writes, in encoded JSON, every character OneLine escapes
// that the encoder left as it is (DEL, C1 controls, bidirectional
// controls; it escapes C0 and the separators itself) as a \u escape: the
// document holds the same values, and printed on a terminal it cannot
// drive it. Outside strings JSON has none of them.
func escapeJSON(b []byte) []byte {
	clean := true
	for _, r := range string(b) {
		if r >= 0x7f && unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for _, r := range string(b) {
		if r >= 0x7f && unsafeRune(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
			continue
		}
		out = utf8.AppendRune(out, r)
	}
	return out
}
