package task

import "os"

// Internals that the tests of package task_test reach.
var StandardJSON = standardJSON

const MaxSampleLine = maxSampleLine

// MaxFolderEntries is the bound on a samples folder's entries, which a
// test may lower.
var MaxFolderEntries = &maxFolderEntries

// ProgramFileOf is the file that keeps p's programs, for a test that
// changes it behind p's back.
func ProgramFileOf(p *ProgramFile) *os.File { return p.f }
