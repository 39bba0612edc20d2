package main

import (
	"github.com/reprolab/repro/internal/rundiff"
	"github.com/spf13/cobra"
)

func newRunsDiffCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare two runs: flipped tasks, pass@k and provenance",
		Long: `diff checks both runs against their signed records, as ` + "`repro runs verify`" + ` does,
and prints what changed from A to B: the tasks whose verdict changed, with
the failing input and reason of each side, pass@k (base and plus) of both,
other summary values that differ, and the provenance fields that differ
(image, dataset, harness, limits, sandbox, host, repro). A and B are run
ids or unique prefixes. --json prints the same as one document.

EXIT STATUS
  0 both runs verify (whatever changed), 1 interrupted by Ctrl-C or
  SIGTERM while checking the runs (nothing printed), 2 unknown run, 4 a run
  does not match its signed record (the diff is still printed, marked).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := rundiff.BuildContext(cmd.Context(), g.home, args[0], args[1])
			if err != nil {
				return err
			}
			t := g.term
			if g.json {
				if err := t.Document(d); err != nil {
					return err
				}
			} else {
				d.WriteText(t.Human())
			}
			return d.VerifiedError()
		},
	}
	g.jsonFlag(cmd, "print JSON")
	return cmd
}
