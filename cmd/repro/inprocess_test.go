package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/ui"
	"github.com/spf13/cobra"
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
	cmd, err := execute(context.Background(), root)
	code := ui.ReportError(&errOut, err, wantsJSON(cmd))
	return code, out.String(), errOut.String()
}

// TestUsageErrorsByType: the usage code comes from where cobra stopped, not
// from the wording of an error, so a command's own failure that reads like
// a cobra message keeps its code.
func TestUsageErrorsByType(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want exitcode.Code
	}{
		{[]string{"lookalike"}, exitcode.Negative},
		{[]string{"lookalike", "extra"}, exitcode.Usage},
		{[]string{"lookalike", "--bogus"}, exitcode.Usage},
		{[]string{"bogus"}, exitcode.Usage},
	} {
		root := newRootCommand()
		root.AddCommand(&cobra.Command{
			Use:  "lookalike",
			Args: cobra.NoArgs,
			RunE: func(*cobra.Command, []string) error {
				return errors.New("unknown command \"x\" for \"repro\"")
			},
		})
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		root.SetArgs(tc.args)
		_, err := execute(context.Background(), root)
		if got := exitcode.Of(err); got != tc.want {
			t.Errorf("repro %v: exit %d (%v), want %d", tc.args, got, err, tc.want)
		}
	}
}

// TestScoreAliasHumanEval: repro humaneval, the command's first name, is
// the same command as repro score, and its help says so.
func TestScoreAliasHumanEval(t *testing.T) {
	code, score, _ := runRepro(t, "score", "--help")
	code2, alias, _ := runRepro(t, "humaneval", "--help")
	if code != 0 || code2 != 0 || score != alias {
		t.Fatalf("score --help (exit %d) and humaneval --help (exit %d) differ:\n%s\n----\n%s", code, code2, score, alias)
	}
	if !strings.Contains(score, "score (--samples PATH") || !strings.Contains(score, "Aliases:\n  score, humaneval") {
		t.Errorf("score --help names neither the command nor its alias:\n%s", score)
	}
	// A flag error names the command as typed, under either name.
	if code, _, stderr := runRepro(t, "humaneval", "--no-such-flag"); code != 2 || !strings.Contains(stderr, "no-such-flag") {
		t.Errorf("humaneval --no-such-flag: exit %d, %s", code, stderr)
	}
}
