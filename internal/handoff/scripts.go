package handoff

import (
	"bytes"
	"embed"
	"fmt"
	"strings"
	"text/template"
)

// The bundle's scripts are text/template files under scripts/, rendered
// from the manifest alone:
//
//   - preflight.sh.tmpl, run.sh.tmpl, job.sbatch.tmpl: the bundle's
//     preflight.sh, run.sh and slurm/job.sbatch;
//   - probe_<workload>.py: the framework probe the preflight runs in the
//     image (a quoted here-document, so no value is ever templated into
//     it), and probechecks_<workload>.sh.tmpl: the shell that reads its
//     answers.
//
// Every value enters a script through shellQuote ({{q ...}}), which makes
// it one shell word on one line whatever it holds; #SBATCH option values
// go through directive, which refuses anything but a plain Slurm word.
// TestScriptValuesQuoted holds every template action to that, and the
// tests lint the files with shellcheck and Python's compiler.
//
//go:embed scripts/*.tmpl scripts/*.py
var scriptFiles embed.FS

func scriptText(name string) string {
	b, err := scriptFiles.ReadFile("scripts/" + name)
	if err != nil {
		panic("handoff: embedded script " + name + " is missing")
	}
	return string(b)
}

// preflightTemplate is the preflight's template text, whose shell
// functions the tests run on their own.
var preflightTemplate = scriptText("preflight.sh.tmpl")

// shellQuote quotes s as one bash word on one line: in single quotes, or,
// when s holds a control character, as $'...' with every such byte, quote
// and backslash escaped. The bundle's scripts run under bash.
func shellQuote(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// quoteValue is the template function q: any value, printed, then quoted.
func quoteValue(v any) string { return shellQuote(fmt.Sprint(v)) }

// directive renders the value of an #SBATCH option, which sbatch reads
// with its own tokenizer (no single quotes): only a plain Slurm word
// passes; anything else fails the rendering.
func directive(v any) (string, error) {
	s := fmt.Sprint(v)
	if !slurmWord.MatchString(s) {
		return "", fmt.Errorf("%q cannot be the value of an #SBATCH option (letters, digits and _.:,+- only)", s)
	}
	return s, nil
}

var scriptFuncs = template.FuncMap{
	"q":         quoteValue,
	"directive": directive,
}

// execScript renders the script template file name with data; the
// templates "probe" and "probechecks" are the workload's probe files.
func execScript(name, workload string, data any) ([]byte, error) {
	t, err := template.New(name).Funcs(scriptFuncs).Option("missingkey=error").Parse(scriptText(name))
	if err != nil {
		return nil, fmt.Errorf("template %s: %v", name, err)
	}
	if workload != "" {
		if _, err := t.New("probe").Parse(scriptText("probe_" + workload + ".py")); err != nil {
			return nil, fmt.Errorf("template %s: %v", name, err)
		}
		if _, err := t.New("probechecks").Parse(scriptText("probechecks_" + workload + ".sh.tmpl")); err != nil {
			return nil, fmt.Errorf("template %s: %v", name, err)
		}
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, name, data); err != nil {
		return nil, fmt.Errorf("template %s: %v", name, err)
	}
	return b.Bytes(), nil
}
