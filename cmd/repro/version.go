package main

import (
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is set by the linker for releases; otherwise it comes from the
// module build information.
var Version = ""

func init() { register(newVersionCommand) }

func versionString() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func newVersionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of repro",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t := terminal(cmd, asJSON)
			if asJSON {
				return t.Document(map[string]string{"version": versionString(), "go": runtime.Version()})
			}
			t.Printf("repro %s (%s)\n", versionString(), runtime.Version())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
