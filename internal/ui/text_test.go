package ui

import "testing"

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, unicode ✓":   "plain text, unicode ✓",
		"a\nb":                    `a\nb`,
		"\x1b[2J\x1b]0;t\x07":     `\x1b[2J\x1b]0;t\a`,
		"cr\rover":                `cr\rover`,
		"bad \xff byte":           `bad \xff byte`,
		"kept \ufffd replacement": "kept \ufffd replacement",
		"c1 \u009b control":       `c1 \u009b control`,
	} {
		if got := OneLine(in); got != want {
			t.Errorf("OneLine(%q) = %q; want %q", in, got, want)
		}
	}
}
