package ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// hostile holds what an outside string may carry to drive a terminal or
// reorder what it shows.
var hostile = map[string]string{
	"ESC":     "\x1b",
	"CSI":     "\x1b[2J\x1b[H",
	"OSC":     "\x1b]0;title\x07",
	"OSC ST":  "\x1b]8;;http://x\x1b\\",
	"CR":      "\r",
	"LF":      "\n",
	"BS":      "\b",
	"DEL":     "\x7f",
	"NEL":     "\u0085",
	"C1 CSI":  "\u009b2J",
	"C1 OSC":  "\u009d0;t\u009c",
	"RLO":     "\u202e",
	"LRE":     "\u202a",
	"PDF":     "\u202c",
	"RLI":     "\u2067",
	"PDI":     "\u2069",
	"LRM":     "\u200e",
	"ALM":     "\u061c",
	"LS":      "\u2028",
	"invalid": "\xff\xfe",
}

// safeLine reports the first character of s that OneLine should have
// escaped, allowing newlines and tabs when lines is true.
func safeLine(s string, lines bool) string {
	for _, r := range s {
		if unsafeRune(r) && !(lines && (r == '\n' || r == '\t')) || r == 0xfffd {
			return string(r)
		}
	}
	return ""
}

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, unicode ✓":   "plain text, unicode ✓",
		"a\nb":                    `a\nb`,
		"\x1b[2J\x1b]0;t\x07":     `\x1b[2J\x1b]0;t\a`,
		"cr\rover":                `cr\rover`,
		"bad \xff byte":           `bad \xff byte`,
		"kept \ufffd replacement": "kept \ufffd replacement",
		"c1 \u009b control":       `c1 \u009b control`,
		"nel \u0085":              `nel \u0085`,
		"abc\u202edcba":           `abc\u202edcba`,
		"\u2066isolate\u2069":     `\u2066isolate\u2069`,
		"tab\there":               `tab\there`,
	} {
		if got := OneLine(in); got != want {
			t.Errorf("OneLine(%q) = %q; want %q", in, got, want)
		}
	}
	for name, h := range hostile {
		if c := safeLine(OneLine("a"+h+"b"), false); c != "" {
			t.Errorf("%s: OneLine leaves %q", name, c)
		}
	}
}

type named string

type stringer struct{}

func (stringer) String() string { return "s\x1b[2J" }

func TestFprintf(t *testing.T) {
	var b bytes.Buffer
	Fprintf(&b, "%s|%-6s|%q|%v|%v|%s|%s|%v|%d|%x|%s\n",
		"a\nb", "\x1b", "q\u202e", []string{"x\ry", "ok"}, errors.New("e\u009b"), named("n\u2028"), stringer{}, 3*time.Second, 42, "hex", nil)
	want := `a\nb|\x1b  |"q\u202e"|[x\ry ok]|e\u009b|n\u2028|s\x1b[2J|3s|42|686578|%!s(<nil>)` + "\n"
	if b.String() != want {
		t.Errorf("Fprintf wrote %q\nwant %q", b.String(), want)
	}
}

func TestTextWriterKeepsLines(t *testing.T) {
	var b bytes.Buffer
	for _, h := range hostile {
		b.Reset()
		n, err := textWriter{&b}.Write([]byte("line one\n\tline" + h + "two\n"))
		if err != nil || n != len("line one\n\tline"+h+"two\n") {
			t.Fatalf("Write = %d, %v", n, err)
		}
		if c := safeLine(b.String(), true); c != "" {
			t.Errorf("%q written as %q: %q left", h, b.String(), c)
		}
		if !strings.HasPrefix(b.String(), "line one\n\tline") || !strings.HasSuffix(b.String(), "two\n") {
			t.Errorf("layout lost: %q", b.String())
		}
	}
}

// TestJSONKeepsValues: a document and a message line carry outside text
// with every hostile character (valid UTF-8: JSON cannot hold the
// invalid bytes) as exact values, and none of them raw.
func TestJSONKeepsValues(t *testing.T) {
	var all strings.Builder
	for name, h := range hostile {
		if name != "invalid" {
			all.WriteString(h)
		}
	}
	key, val := "name"+all.String(), "v"+all.String()
	var out, errOut bytes.Buffer
	term := New(&out, &errOut, true)
	if err := term.Document(map[string]string{key: val}); err != nil {
		t.Fatal(err)
	}
	if err := term.Message(MessageSummary, map[string]string{key: val}); err != nil {
		t.Fatal(err)
	}
	if c := safeLine(out.String(), true); c != "" {
		t.Errorf("JSON output holds %q raw: %q", c, out.String())
	}
	dec := json.NewDecoder(&out)
	for range 2 {
		var got map[string]string
		if err := dec.Decode(&got); err != nil {
			t.Fatal(err)
		}
		if got[key] != val {
			t.Errorf("value changed: %q", got)
		}
	}
}
