package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/spf13/cobra"
)

// execute runs the command line of root and returns the command it chose
// and its error. Cobra rejects a malformed command line (unknown command or
// flag, wrong number of arguments, missing required flag) before a
// command's RunE starts; any error that comes back without an exit code
// before that point is such a rejection and becomes an *exitcode.Error
// with the usage code, so exit codes are decided by type alone.
func execute(ctx context.Context, root *cobra.Command) (*cobra.Command, error) {
	started := false
	var mark func(c *cobra.Command)
	mark = func(c *cobra.Command) {
		if run := c.RunE; run != nil {
			c.RunE = func(cmd *cobra.Command, args []string) error {
				started = true
				return run(cmd, args)
			}
		}
		for _, sub := range c.Commands() {
			mark(sub)
		}
	}
	mark(root)
	cmd, err := root.ExecuteContextC(ctx)
	var ee *exitcode.Error
	if err != nil && !started && !errors.As(err, &ee) {
		err = exitcode.New(exitcode.Usage, err)
	}
	return cmd, err
}

// writeJSON prints v as one indented JSON document on stdout.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// stdout returns where a command's main output goes (os.Stdout unless a
// test redirected it).
func stdout(cmd *cobra.Command) io.Writer { return cmd.OutOrStdout() }
