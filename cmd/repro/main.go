// Command repro reproduces landmark machine-learning results under stated
// security controls and records what ran. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/ui"
	"github.com/spf13/cobra"
)

// commands holds the constructors of the top-level commands; each command's
// file registers its constructor in an init function. A constructor gets
// the root command's global options, filled before the command runs.
var commands []func(*globalOptions) *cobra.Command

func register(newCmd func(*globalOptions) *cobra.Command) { commands = append(commands, newCmd) }

func newRootCommand() *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:           "repro",
		Short:         "Reproduce landmark ML results under stated security controls",
		SilenceErrors: true,
		SilenceUsage:  true,
		Long: `repro reproduces landmark machine-learning results under the controls of its
security review and records what ran.

EXIT STATUS
  0 ok, 1 negative verdict, 2 usage error, 3 precondition missing (nothing ran),
  4 integrity violation.`,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return g.setUp(cmd)
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return exitcode.New(exitcode.Usage, err)
	})
	for _, c := range commands {
		root.AddCommand(c(g))
	}
	return root
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cmd, err := execute(ctx, newRootCommand())
	stop()
	os.Exit(int(ui.ReportError(os.Stderr, err, wantsJSON(cmd))))
}
