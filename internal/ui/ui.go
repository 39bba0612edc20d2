// Package ui is repro's one output layer. A command makes one Terminal
// from its stdout, its stderr and its --json flag, and writes everything
// through it:
//
//   - The result goes to stdout: text for people, or with --json one JSON
//     document (Document) or, for commands that stream, JSON lines, each
//     an object whose first field is "message_type" (Message).
//   - Text for people that is not the result (warnings, notes, the human
//     summary under --json) goes to stderr, so that stdout under --json
//     holds nothing but JSON.
//   - Progress is drawn in place on stderr, and only when stderr is a
//     terminal; whether it is one is decided once, in New.
//   - A failure is one line on stderr: "repro: <message>", or under --json
//     an exit_error object (ReportError).
//
// Outside text (file names, sample ids, pickle names, log values,
// reasons, what a container printed) reaches people only through OneLine,
// the one escaping function: messages (Notef, Warnf, failures) and table
// cells are passed through it whole, text reports are written with
// Fprintf, which passes every string argument through it, and Human and
// Stderr escape the control and bidirectional characters of whatever else
// is written (all but newlines and tabs). No outside string can add a
// line, clear the screen, move the cursor or reorder the text. JSON keeps
// exact values: what the encoder leaves raw of those characters is
// written as a \u escape. docs/json.md documents the JSON contract.
package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/reprolab/repro/internal/exitcode"
	"golang.org/x/term"
)

// Message types of the JSON lines streams and of the failure object.
const (
	MessageProgress  = "progress"
	MessageSummary   = "summary"
	MessageExitError = "exit_error"
)

// Terminal is the output of one command.
type Terminal struct {
	stdout, stderr io.Writer
	json           bool
	tty            bool // stderr is a terminal

	mu     sync.Mutex
	status bool // a status line is drawn and not yet cleared
}

// New returns the Terminal of a command that writes its result to stdout
// and everything else to stderr; asJSON is the command's --json flag.
func New(stdout, stderr io.Writer, asJSON bool) *Terminal {
	return &Terminal{stdout: stdout, stderr: stderr, json: asJSON, tty: isTerminal(stderr)}
}

// isTerminal reports whether w is a terminal. It is the only place repro
// asks.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// JSON reports whether the command prints JSON.
func (t *Terminal) JSON() bool { return t.json }

// Stdout is where the command's result goes, as it is: a document or
// data (a record, an SBOM, a key). Text for people goes to Human.
func (t *Terminal) Stdout() io.Writer { return t.stdout }

// Stderr is stderr, for text that is not the command's result (the
// problems of a report, the stderr of a program run in the sandbox), its
// control and bidirectional characters escaped but newlines and tabs.
func (t *Terminal) Stderr() io.Writer {
	t.ClearStatus()
	return textWriter{t.stderr}
}

// Human is where text for people goes: stdout, or stderr under --json,
// its control and bidirectional characters escaped but newlines and tabs.
// Write reports to it with Fprintf.
func (t *Terminal) Human() io.Writer {
	if t.json {
		return textWriter{t.stderr}
	}
	return textWriter{t.stdout}
}

// Printf writes text for people (see Human) with Fprintf: every string
// argument is outside text.
func (t *Terminal) Printf(format string, args ...any) {
	t.ClearStatus()
	Fprintf(t.Human(), format, args...)
}

// Notef writes one line on stderr, whatever --json says: a note or a
// problem that is not the command's result.
func (t *Terminal) Notef(format string, args ...any) {
	t.ClearStatus()
	fmt.Fprintln(t.stderr, OneLine(fmt.Sprintf(format, args...)))
}

// Warnf writes "repro: warning: ..." on stderr.
func (t *Terminal) Warnf(format string, args ...any) {
	t.Notef("repro: warning: "+format, args...)
}

// Document writes v as one indented JSON document on stdout.
func (t *Terminal) Document(v any) error {
	t.ClearStatus()
	return writeDocument(t.stdout, v)
}

// JSONText writes b, JSON text as it was stored (a run's record), on
// stdout with the characters that could drive a terminal written as \u
// escapes: the same values.
func (t *Terminal) JSONText(b []byte) error {
	t.ClearStatus()
	_, err := t.stdout.Write(escapeJSON(b))
	return err
}

func writeDocument(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escapeJSON(buf.Bytes()))
	return err
}

// Table writes rows as aligned columns on stdout, for people; the first
// row is the header. Control characters in cells are escaped.
func (t *Terminal) Table(rows [][]string) error {
	t.ClearStatus()
	tw := tabwriter.NewWriter(t.stdout, 0, 4, 2, ' ', 0)
	for _, row := range rows {
		for i, cell := range row {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, OneLine(cell))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// Message writes v, a struct or map that encodes as a JSON object, as one
// line on stdout with "message_type": typ as its first field.
func (t *Terminal) Message(typ string, v any) error {
	line, err := messageLine(typ, v)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, err = t.stdout.Write(line)
	return err
}

func messageLine(typ string, v any) ([]byte, error) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := bytes.TrimSpace(body.Bytes())
	if len(b) < 2 || b[0] != '{' {
		return nil, fmt.Errorf("ui: a %s message must be a JSON object, not %.20s", typ, b)
	}
	head, _ := json.Marshal(typ)
	out := append([]byte(`{"message_type":`), head...)
	if rest := bytes.TrimSpace(b[1:]); !bytes.Equal(rest, []byte("}")) {
		out = append(out, ',')
		out = append(out, rest...)
	} else {
		out = append(out, '}')
	}
	return append(escapeJSON(out), '\n'), nil
}

// Status draws line in place of the previous status line, on a terminal
// only (never under --json).
func (t *Terminal) Status(line string) { t.drawStatus(line, false) }

// StatusDone draws line in place of the status line and ends it, so the
// next status starts on a new line (a finished download).
func (t *Terminal) StatusDone(line string) { t.drawStatus(line, true) }

func (t *Terminal) drawStatus(line string, done bool) {
	if !t.tty || t.json {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	end := ""
	if done {
		end = "\n"
	}
	fmt.Fprintf(t.stderr, "\r\033[K%s%s", OneLine(line), end)
	t.status = !done
}

// ClearStatus removes the status line, if one is drawn.
func (t *Terminal) ClearStatus() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.status {
		fmt.Fprint(t.stderr, "\r\033[K")
		t.status = false
	}
}

// Log is where a tool repro runs may write its own progress (the EDM
// runtime, debootstrap): stderr on a terminal, nil otherwise.
func (t *Terminal) Log() io.Writer {
	if !t.tty || t.json {
		return nil
	}
	return t.stderr
}

// exitError is the --json form of a failure.
type exitError struct {
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
}

// ReportError writes err as the one line of a failure on stderr and
// returns its exit code: "repro: <message>", or under --json
// {"message_type":"exit_error","error":...,"exit_code":...}. A nil err
// writes nothing and returns exitcode.OK.
func ReportError(stderr io.Writer, err error, asJSON bool) exitcode.Code {
	if err == nil {
		return exitcode.OK
	}
	code := exitcode.Of(err)
	if asJSON {
		line, jerr := messageLine(MessageExitError, exitError{Error: err.Error(), ExitCode: int(code)})
		if jerr == nil {
			stderr.Write(line)
			return code
		}
	}
	fmt.Fprintf(stderr, "repro: %s\n", OneLine(err.Error()))
	return code
}

// Bytes formats a byte count in binary units for people.
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Bar draws a progress bar of n out of total bytes.
func Bar(n, total int64) string {
	const width = 30
	if total <= 0 {
		return fmt.Sprintf("%d bytes", n)
	}
	filled := min(int(n*width/total), width)
	return fmt.Sprintf("[%s%s] %5.1f%% of %s", strings.Repeat("#", max(filled, 0)), strings.Repeat(".", width-max(filled, 0)),
		100*float64(n)/float64(total), Bytes(total))
}
