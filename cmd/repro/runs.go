package main

import (
	"fmt"

	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/runs"
	"github.com/spf13/cobra"
)

func init() { register(newRunsCommand) }

func newRunsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List, show and verify the records of past runs",
		Long: `Every workload run leaves a folder REPRO_HOME/runs/<id> with its results and a
record (record.json) of what ran: assets and their digests, image, harness,
limits, host facts, self-check and results, with the SHA-256 of every file in
the folder. The record is signed with the local run key (REPRO_HOME/keys) as a
DSSE envelope (record.dsse.json).`,
	}
	cmd.AddCommand(newRunsListCommand(), newRunsShowCommand(), newRunsVerifyCommand(), newRunsDiffCommand())
	return cmd
}

// openRun finds a run of the store at REPRO_HOME by id or unique prefix.
func openRun(id string) (*runs.Run, error) {
	home, err := layout.DefaultHome()
	if err != nil {
		return nil, err
	}
	return runs.Open(home, id)
}

func newRunsListCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t := terminal(cmd, asJSON)
			home, err := layout.DefaultHome()
			if err != nil {
				return err
			}
			rows, err := runs.Summaries(home)
			if err != nil {
				return err
			}
			if asJSON {
				if rows == nil {
					rows = []runs.Summary{}
				}
				return t.Document(map[string]any{"runs": rows})
			}
			table := [][]string{{"ID", "KIND", "STATUS", "FINISHED"}}
			for _, r := range rows {
				table = append(table, []string{r.ID, r.Kind, r.Status, r.Finished})
			}
			return t.Table(table)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newRunsShowCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Print the record of a run (JSON)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t := terminal(cmd, false)
			r, err := openRun(args[0])
			if err != nil {
				return err
			}
			_, raw, err := r.ReadRecord()
			if err != nil {
				return err
			}
			_, err = t.Stdout().Write(raw)
			return err
		},
	}
	return cmd
}

func newRunsVerifyCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify ID",
		Short: "Check a run folder against its signed record",
		Long: `verify checks the record's DSSE signature with the local public run key,
that record.json is the signed payload, and that the run folder holds exactly
the recorded files with the recorded SHA-256.

EXIT STATUS
  0 the run matches its record, 2 unknown run, 4 anything differs.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t := terminal(cmd, asJSON)
			r, err := openRun(args[0])
			if err != nil {
				return err
			}
			rec, problems, verr := r.Verify()
			if asJSON {
				if problems == nil {
					problems = []runs.Problem{}
				}
				if err := t.Document(map[string]any{"id": r.ID, "ok": verr == nil, "problems": problems}); err != nil {
					return err
				}
				return verr
			}
			if verr != nil {
				return verr
			}
			fmt.Fprintf(t.Stdout(), "run %s matches its signed record (%d files, status %s)\n", r.ID, len(rec.Files), rec.Status)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
