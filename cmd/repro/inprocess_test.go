package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

// runRepro runs a command line in-process and returns its exit code,
// stdout and stderr (with the error line main would print).
func runRepro(t *testing.T, args ...string) (exitcode.Code, string, string) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	code := exitCodeOf(err)
	if err != nil {
		errOut.WriteString("repro: " + err.Error() + "\n")
	}
	return code, out.String(), errOut.String()
}
