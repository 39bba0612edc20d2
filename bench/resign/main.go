// Command resign signs a finished run of a REPRO_HOME again with that
// home's run key, after its files were changed: what a submitter whose
// key a leaderboard maintainer trusts can do to its own runs.
// bench/dashboard-walkthrough.sh uses it to make the forged bundle that
// `repro runs reproduce` must catch.
//
// Usage: resign REPRO_HOME RUN_ID
package main

import (
	"fmt"
	"os"

	"github.com/reprolab/repro/internal/runs"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: resign REPRO_HOME RUN_ID")
		os.Exit(2)
	}
	r, err := runs.Open(os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "resign:", err)
		os.Exit(2)
	}
	rec, _, err := r.ReadRecord()
	if err == nil {
		err = r.Finish(rec, rec.ExitCode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "resign:", err)
		os.Exit(1)
	}
	fmt.Println("re-signed", r.ID)
}
