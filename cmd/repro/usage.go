package main

import (
	"encoding/json"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// isUsageError recognises the errors cobra returns for a malformed command
// line, which must exit with the usage code.
func isUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "requires at most", "requires exactly", "invalid argument", "flag needs an argument", "required flag"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
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
