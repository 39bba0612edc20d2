package main

import (
	"context"
	"errors"

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

// wantsJSON reports whether the command that ran was given --json, so
// that its failure is reported as JSON too.
func wantsJSON(cmd *cobra.Command) bool {
	if cmd == nil {
		return false
	}
	f := cmd.Flags().Lookup("json")
	return f != nil && f.Value.String() == "true"
}
