// Command stamped is a tiny program the buildinfo tests cross-compile with
// a version and commit stamped by the linker, as scripts/release.sh does.
package main

import (
	"fmt"

	"golang.org/x/mod/semver"
)

var (
	Version = ""
	Commit  = ""
)

func main() { fmt.Println(Version, Commit, semver.IsValid(Version)) }
