package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs/runstest"
)

// hostileText is what an outside string may carry to forge a line or drive
// a terminal: LF and CR, ESC with CSI (clear the screen, move the cursor),
// OSC (set the title, a hyperlink), backspace and DEL, NEL and the C1
// controls (CSI, OSC, ST as single characters), the bidirectional
// embeddings, overrides, isolates and marks, and the line and paragraph
// separators.
const hostileText = "\nFORGED verdict CLEAN\r\x1b[2J\x1b[H\x1b]0;owned\x07\x1b]8;;http://x\x1b\\\b\x7f" +
	"\u0085\u009b2J\u009d0;t\u009c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u2028\u2029"

// hostileName is hostileText as a file name (no slash).
var hostileName = strings.ReplaceAll(hostileText, "/", "_")

// drivesTerminal returns the first character of s that could drive a
// terminal or reorder what it shows; newlines and tabs are repro's own.
func drivesTerminal(s string) (rune, bool) {
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
		case unicode.IsControl(r), r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e,
			r >= 0x2066 && r <= 0x2069, r == 0x2028, r == 0x2029:
			return r, true
		}
	}
	return 0, false
}

// checkText fails when text for people (stdout and stderr of a command
// without --json) holds a character that could drive a terminal or a line
// the hostile text started.
func checkText(t *testing.T, what, text string) {
	t.Helper()
	if r, bad := drivesTerminal(text); bad {
		t.Errorf("%s: %U reaches the terminal:\n%q", what, r, text)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "FORGED") {
			t.Errorf("%s: a forged line: %q", what, text)
		}
	}
}

// checkJSON fails when a --json document holds a character that could
// drive a terminal as it is, or does not hold the hostile text exactly as
// a value (the document keeps exact values).
func checkJSON(t *testing.T, what, doc string, wantHostile bool) {
	t.Helper()
	if r, bad := drivesTerminal(doc); bad {
		t.Errorf("%s: %U is raw in the JSON document", what, r)
	}
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Errorf("%s: not JSON: %v\n%s", what, err, doc)
		return
	}
	if wantHostile && !holds(v, hostileText) && !holds(v, hostileName) {
		t.Errorf("%s: no value holds the hostile text exactly:\n%s", what, doc)
	}
}

// holds reports whether a string of v (a key or a value) contains s.
func holds(v any, s string) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, s)
	case []any:
		for _, e := range v {
			if holds(e, s) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.Contains(k, s) || holds(e, s) {
				return true
			}
		}
	}
	return false
}

// shortUnicode replaces, in a pickle, the SHORT_BINUNICODE string old by
// new (its length byte with it).
func shortUnicode(t *testing.T, pkl []byte, old, new string) []byte {
	t.Helper()
	from := append([]byte{0x8c, byte(len(old))}, old...)
	if len(new) > 255 || !bytes.Contains(pkl, from) {
		t.Fatalf("pickle holds no short string %q (or %d bytes is too long)", old, len(new))
	}
	return bytes.Replace(pkl, from, append([]byte{0x8c, byte(len(new))}, new...), 1)
}

// TestHostilePickleCannotDriveTheTerminal scans EDM snapshots whose class
// name, tensor name and global name carry the hostile text: the text
// report shows them escaped, the JSON report exactly.
func TestHostilePickleCannotDriveTheTerminal(t *testing.T) {
	snap, err := os.ReadFile(snapshotFixture)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string][]byte{
		"class and tensor": shortUnicode(t, shortUnicode(t, snap, "EDMPrecond", "EDM"+hostileText), "w", "w"+hostileText),
		"global":           shortUnicode(t, snap, "_reconstruct_persistent_obj", "_reconstruct"+hostileText),
		"source":           shortUnicode(t, snap, "class EDMPrecond:\n    pass\n", "class EDMPrecond:\n    pass\n#"+hostileText+"\n"),
	}
	for name, b := range files {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+hostileName+".pkl")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, profile := range []string{"edm-checkpoint", "torch-state-dict"} {
			code, stdout, stderr := runRepro(t, "pickle", "scan", "--profile", profile, path)
			if code == exitcode.Usage || code == exitcode.Precondition {
				t.Fatalf("%s: exit %d: %s", name, code, stderr)
			}
			if !strings.Contains(stdout, `\x1b[2J`) || !strings.Contains(stdout, `\u202e`) {
				t.Errorf("%s (%s): the hostile names are not listed, escaped:\n%s", name, profile, stdout)
			}
			checkText(t, "pickle scan "+name+" stdout", stdout)
			checkText(t, "pickle scan "+name+" stderr", stderr)
			_, doc, stderr := runRepro(t, "pickle", "scan", "--profile", profile, "--json", path)
			checkJSON(t, "pickle scan --json "+name, doc, true)
			checkText(t, "pickle scan --json "+name+" stderr", stderr)
		}
	}
}

// TestHostileMLLOGCannotDriveTheTerminal verifies a log whose name,
// benchmark, keys, values and metadata carry the hostile text, then reads
// the run it records with every command that shows a run.
func TestHostileMLLOGCannotDriveTheTerminal(t *testing.T) {
	home := t.TempDir()
	t.Setenv("REPRO_HOME", home)
	h, _ := json.Marshal(hostileText)
	log := ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1, \"event_type\": \"POINT_IN_TIME\", \"key\": \"submission_benchmark\", \"value\": " + string(h) +
		", \"metadata\": {\"file\": " + string(h) + ", \"lineno\": 1}}\n" +
		":::MLLOG {\"namespace\": \"\", \"time_ms\": 2, \"event_type\": \"POINT_IN_TIME\", \"key\": " + string(h) + ", \"value\": " + string(h) +
		", \"metadata\": {\"file\": \"f\", \"lineno\": 2}}\n" +
		"not a log line " + hostileText + "\n"
	path := filepath.Join(t.TempDir(), "log"+hostileName+".txt")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runRepro(t, "mllog", "verify", path)
	if code != exitcode.Negative || !strings.Contains(stdout, `\u202e`) {
		t.Fatalf("mllog verify: exit %d\n%s%s", code, stdout, stderr)
	}
	checkText(t, "mllog verify stdout", stdout)
	checkText(t, "mllog verify stderr", stderr)
	_, doc, stderr := runRepro(t, "mllog", "verify", "--json", path)
	checkJSON(t, "mllog verify --json", doc, true)
	checkText(t, "mllog verify --json stderr", stderr)
	checkRunCommands(t, home)
}

// TestHostileRunFieldsCannotDriveTheTerminal shows humaneval runs whose
// task ids, failing inputs, reasons, host name and dataset carry the
// hostile text, with every command that shows or compares runs.
func TestHostileRunFieldsCannotDriveTheTerminal(t *testing.T) {
	home := t.TempDir()
	t.Setenv("REPRO_HOME", home)
	h, _ := json.Marshal(hostileText)
	a := runstest.HumanEvalRun(t, home, []runstest.Sample{
		{Task: "HumanEval/0", FailingInput: "[3, " + string(h) + "]", Reason: "AssertionError: " + hostileText},
		{Task: "HumanEval/1" + hostileText, Pass: true},
	}, runstest.HumanEvalOptions{Hostname: "host" + hostileText, Dataset: "humanevalplus" + hostileText})
	b := runstest.HumanEvalRun(t, home, []runstest.Sample{
		{Task: "HumanEval/0", Pass: true},
		{Task: "HumanEval/1" + hostileText, FailingInput: string(h), Reason: hostileText},
	}, runstest.HumanEvalOptions{Harness: strings.Repeat("5", 64)})
	code, stdout, stderr := runRepro(t, "runs", "diff", a, b)
	if code != exitcode.OK || !strings.Contains(stdout, `\u202e`) {
		t.Fatalf("runs diff: exit %d\n%s%s", code, stdout, stderr)
	}
	checkText(t, "runs diff stdout", stdout)
	checkText(t, "runs diff stderr", stderr)
	_, doc, stderr := runRepro(t, "runs", "diff", "--json", a, b)
	checkJSON(t, "runs diff --json", doc, true)
	checkText(t, "runs diff --json stderr", stderr)
	checkRunCommands(t, home)
}

// checkRunCommands runs, on every run under home, the commands that show
// a run: list, verify, show, and the report in each format.
func checkRunCommands(t *testing.T, home string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(home, "runs"))
	if err != nil || len(ents) == 0 {
		t.Fatalf("no runs under %s: %v", home, err)
	}
	for _, args := range [][]string{{"runs", "list"}, {"runs", "list", "--json"}} {
		_, stdout, stderr := runRepro(t, args...)
		if args[len(args)-1] == "--json" {
			checkJSON(t, strings.Join(args, " "), stdout, false)
		} else {
			checkText(t, strings.Join(args, " ")+" stdout", stdout)
		}
		checkText(t, strings.Join(args, " ")+" stderr", stderr)
	}
	for _, e := range ents {
		id := e.Name()
		for _, args := range [][]string{
			{"runs", "verify", id}, {"runs", "verify", "--json", id}, {"runs", "show", id},
			{"report", id, "--format", "md"}, {"report", id, "--format", "json"}, {"report", id, "--format", "html"},
		} {
			code, stdout, stderr := runRepro(t, args...)
			if code != exitcode.OK && code != exitcode.Negative {
				t.Errorf("repro %q: exit %d: %s", args, code, stderr)
			}
			what := "repro " + strings.Join(args[:len(args)-1], " ")
			switch {
			case args[len(args)-1] == "md" || args[0] == "runs" && args[1] == "verify" && args[2] != "--json":
				checkText(t, what+" stdout", stdout)
			case args[len(args)-1] == "html":
				if r, bad := drivesTerminal(stdout); bad {
					t.Errorf("%s: %U is raw in the HTML", what, r)
				}
			default:
				checkJSON(t, what, stdout, false)
			}
			checkText(t, what+" stderr", stderr)
		}
	}
}

// TestHostileProgramOutputCannotDriveTheTerminal scores, in the sandbox,
// samples that print the hostile text and fail with it as their reason,
// beside a sample for a task id that carries it, then shows the run; and
// runs a program that prints it with `repro sandbox run`.
func TestHostileProgramOutputCannotDriveTheTerminal(t *testing.T) {
	home := humanevalHome(t, true)
	env := []string{"REPRO_HOME=" + home}
	h, _ := json.Marshal(hostileText)
	prog := "import sys\nsys.stdout.write(" + string(h) + ")\nsys.stderr.write(" + string(h) + ")\n" +
		"def triangle_area(a, h):\n    raise ValueError(" + string(h) + ")\n"
	samples := writeSamples(t, sampleLine("HumanEval/45", prog), sampleLine("HumanEval/45"+hostileText, "x"))
	r := repro(t, env, "humaneval", "--samples", samples, "--dataset", "humanevalplus-mini", "--tasks", "45")
	if r.code != 0 || !strings.Contains(r.stderr, `\u202e`) {
		t.Fatalf("humaneval: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	checkText(t, "humaneval stdout", r.stdout)
	checkText(t, "humaneval stderr", r.stderr)
	r = repro(t, env, "humaneval", "--samples", samples, "--dataset", "humanevalplus-mini", "--tasks", "45", "--json")
	checkJSON(t, "humaneval --json", r.stdout, false)
	checkText(t, "humaneval --json stderr", r.stderr)
	id := parseHumanEvalJSON(t, r).RunID
	for _, args := range [][]string{{"report", id, "--format", "md"}, {"runs", "verify", id}} {
		r := repro(t, env, args...)
		if r.code != 0 || args[0] == "report" && !strings.Contains(r.stdout, "ValueError") {
			t.Errorf("repro %q: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		checkText(t, strings.Join(args, " ")+" stdout", r.stdout)
		checkText(t, strings.Join(args, " ")+" stderr", r.stderr)
	}
	r = repro(t, env, "sandbox", "run", "--", "python3", "-c", "import sys; sys.stdout.write("+string(h)+"); sys.stderr.write("+string(h)+")")
	if r.code != 0 || !strings.Contains(r.stdout, `\u202e`) || !strings.Contains(r.stderr, `\x1b[2J`) {
		t.Fatalf("sandbox run: exit %d\n%q\n%q", r.code, r.stdout, r.stderr)
	}
	// The program's lines are its own; repro's note is the last line.
	for stream, text := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
		if c, bad := drivesTerminal(text); bad {
			t.Errorf("sandbox run %s: %U reaches the terminal:\n%q", stream, c, text)
		}
	}
	if lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n"); !strings.HasPrefix(lines[len(lines)-1], "exit 0 signal") {
		t.Errorf("sandbox run: repro's note does not start its own line:\n%q", r.stderr)
	}
	r = repro(t, env, "sandbox", "run", "--json", "--", "python3", "-c", "import sys; sys.stdout.write("+string(h)+")")
	checkJSON(t, "sandbox run --json", r.stdout, true)
}
