package ui

import (
	"strconv"
	"strings"
	"unicode"
)

// OneLine returns s with every control character (newline, carriage
// return, escape, bell, ...) and every invalid byte written as a Go escape,
// so a message that carries a hostile file name or sample text stays one
// line and cannot drive the terminal.
func OneLine(s string) string {
	clean := true
	for _, r := range s {
		if r == unicode.ReplacementChar || unicode.IsControl(r) {
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
		case r == unicode.ReplacementChar && strings.HasPrefix(s[i:], "\ufffd"):
			b.WriteRune(r)
		case r == unicode.ReplacementChar:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i]), 16))
		case unicode.IsControl(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
