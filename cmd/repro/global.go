package main

import (
	"errors"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/ui"
	"github.com/spf13/cobra"
)

// globalOptions is what every command shares: the REPRO_HOME it works in,
// the trust file and --json it was given, and its output layer. One value
// is made per root command; the root command's PersistentPreRunE fills it
// once, after the command line is parsed and before a command runs, so a
// command reads it and never sets it up again.
type globalOptions struct {
	// home is REPRO_HOME made absolute, else the default of
	// layout.DefaultHome.
	home string
	// trust is the --trust flag of a command that takes one; "" means the
	// home's trust file (layout.Home.Trust), as each command documents.
	trust string
	// json is the --json flag of a command that takes one.
	json bool
	// term writes the command's output: its stdout and stderr (os.Stdout
	// and os.Stderr unless a test redirected them), in JSON under --json.
	term *ui.Terminal
}

// setUp fills g for cmd, the command about to run. A home that cannot be
// found stops the command before it starts, with layout.DefaultHome's
// error (exit 3: set REPRO_HOME), unless cmd is marked by noHome: such a
// command runs with g.home empty.
func (g *globalOptions) setUp(cmd *cobra.Command) error {
	g.term = ui.New(cmd.OutOrStdout(), cmd.ErrOrStderr(), g.json)
	home, err := layout.DefaultHome()
	if err != nil {
		if cmd.Annotations[noHomeAnnotation] != "" {
			return nil
		}
		var ee *exitcode.Error
		if !errors.As(err, &ee) {
			// The code a command's own failure has.
			err = exitcode.New(exitcode.Negative, err)
		}
		return err
	}
	g.home = home
	return nil
}

// noHomeAnnotation marks a command that reads and writes nothing under
// REPRO_HOME (g.home and g.trust unused), so that it
// runs where no home can be found.
const noHomeAnnotation = "repro/no-home"

// noHome marks cmd as one that uses no REPRO_HOME and returns it.
func noHome(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[noHomeAnnotation] = "true"
	return cmd
}

// jsonFlag registers --json on cmd, with the help text of that command,
// as the switch of the shared output layer. A command without it prints
// text only and refuses --json as an unknown flag.
func (g *globalOptions) jsonFlag(cmd *cobra.Command, usage string) {
	cmd.Flags().BoolVar(&g.json, "json", false, usage)
}

// trustFlag registers --trust on cmd, with the help text of that command
// (each documents its own default).
func (g *globalOptions) trustFlag(cmd *cobra.Command, usage string) {
	cmd.Flags().StringVar(&g.trust, "trust", "", usage)
}
