package handoff

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/template"
	"text/template/parse"

	"github.com/reprolab/repro/internal/testenv"
)

// scriptTemplates lists the embedded script files of a kind (".tmpl" or
// ".py").
func scriptTemplates(t *testing.T, suffix string) []string {
	t.Helper()
	names, err := fs.Glob(scriptFiles, "scripts/*"+suffix)
	if err != nil || len(names) == 0 {
		t.Fatalf("no embedded scripts/*%s: %v", suffix, err)
	}
	return names
}

// TestScriptValuesQuoted holds every template action of the bundle scripts
// to the one quoting function: a value is printed only as {{q ...}} (or
// {{directive ...}} on an #SBATCH line), never inside a double-quoted
// string (where the single quotes q adds would not protect it), and never
// raw. Control actions (if, range, template) print nothing themselves.
func TestScriptValuesQuoted(t *testing.T) {
	for _, name := range scriptTemplates(t, ".tmpl") {
		text := scriptText(strings.TrimPrefix(name, "scripts/"))
		tmpl, err := template.New(name).Funcs(scriptFuncs).Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		var walk func(n parse.Node)
		walk = func(n parse.Node) {
			switch n := n.(type) {
			case *parse.ListNode:
				if n != nil {
					for _, c := range n.Nodes {
						walk(c)
					}
				}
			case *parse.IfNode:
				walk(n.List)
				walk(n.ElseList)
			case *parse.RangeNode:
				walk(n.List)
				walk(n.ElseList)
			case *parse.WithNode:
				walk(n.List)
				walk(n.ElseList)
			case *parse.ActionNode:
				cmds := n.Pipe.Cmds
				fn := ""
				if id, ok := cmds[len(cmds)-1].Args[0].(*parse.IdentifierNode); ok {
					fn = id.Ident
				}
				line := lineAt(text, int(n.Pos))
				switch {
				case fn == "directive" && strings.HasPrefix(line, "#SBATCH "):
				case fn == "q" && !insideDoubleQuotes(line, text, int(n.Pos)):
				default:
					t.Errorf("%s: the value %s is not printed through q (or directive on an #SBATCH line), or sits inside double quotes: %q", name, n, line)
				}
			}
		}
		walk(tmpl.Tree.Root)
	}
}

// lineAt returns the line of text holding offset pos.
func lineAt(text string, pos int) string {
	start := strings.LastIndexByte(text[:pos], '\n') + 1
	end := strings.IndexByte(text[pos:], '\n')
	if end < 0 {
		return text[start:]
	}
	return text[start : pos+end]
}

// insideDoubleQuotes reports whether offset pos of text lies inside a
// double-quoted string of its line (quotes inside single quotes and
// escaped ones do not count; a comment line is never quoted).
func insideDoubleQuotes(_ string, text string, pos int) bool {
	start := strings.LastIndexByte(text[:pos], '\n') + 1
	prefix := text[start:pos]
	if strings.HasPrefix(strings.TrimSpace(prefix), "#") {
		return false
	}
	inDouble, inSingle := false, false
	for i := 0; i < len(prefix); i++ {
		switch c := prefix[i]; {
		case c == '\\' && !inSingle:
			i++
		case c == '\'' && !inDouble:
			inSingle = !inSingle
		case c == '"' && !inSingle:
			inDouble = !inDouble
		}
	}
	return inDouble
}

var (
	controlAction = regexp.MustCompile(`\{\{-?\s*(if|else|end|range|with|template)\b[^}]*-?\}\}`)
	valueAction   = regexp.MustCompile(`\{\{-?[^}]*-?\}\}`)
)

// TestScriptFilesLint lints the script templates as files: shellcheck on
// each with control actions removed and every value a plain word (so both
// branches of an if are checked), and Python's compiler on each probe.
func TestScriptFilesLint(t *testing.T) {
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		testenv.Missing(t, "shellcheck", "apt-get install shellcheck")
	}
	dir := t.TempDir()
	for _, name := range scriptTemplates(t, ".tmpl") {
		text := scriptText(strings.TrimPrefix(name, "scripts/"))
		text = valueAction.ReplaceAllString(controlAction.ReplaceAllString(text, ""), "VALUE")
		if strings.HasPrefix(filepath.Base(name), "probechecks_") {
			// A fragment of the preflight's check_framework function.
			text = "#!/bin/bash\nfail() { :; }\nok() { :; }\nfield() { :; }\nversion_ok() { :; }\ncheck() {\nid=x\n" + text + "}\ncheck\n"
		}
		p := filepath.Join(dir, filepath.Base(name))
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		// SC2043: a range of many values stands here as one VALUE.
		if out, err := exec.Command(sc, "-s", "bash", "-S", "warning", "-e", "SC2043", p).CombinedOutput(); err != nil {
			t.Errorf("shellcheck %s:\n%s", name, out)
		}
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.Missing(t, "python3", "apt-get install python3")
	}
	for _, name := range scriptTemplates(t, ".py") {
		p := filepath.Join(dir, filepath.Base(name))
		if err := os.WriteFile(p, []byte(scriptText(strings.TrimPrefix(name, "scripts/"))), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(py, "-c", "import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])", p).CombinedOutput(); err != nil {
			t.Errorf("python syntax %s:\n%s", name, out)
		}
	}
}

// TestShellQuoteOneWord checks the quoting function itself: whatever the
// value, bash reads it back as exactly one word equal to it, and the
// quoted text is one line.
func TestShellQuoteOneWord(t *testing.T) {
	values := []string{"", "plain", "it's", `a"b`, "$(id)", "`id`", "x;y", "a && b", "back\\slash", "new\nline", "tab\there", "cr\rx", "\x01\x7f", "'", "''", "$'x'", "${HOME}", "*", "~", "-n"}
	for _, v := range values {
		q := shellQuote(v)
		if strings.ContainsAny(q, "\n\r") {
			t.Errorf("shellQuote(%q) = %q spans lines", v, q)
		}
		out, err := exec.Command("bash", "-c", "set -f; printf '%s' "+q).Output()
		if err != nil || string(out) != v {
			t.Errorf("bash reads shellQuote(%q) = %s back as %q (%v)", v, q, out, err)
		}
	}
}
