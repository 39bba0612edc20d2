package task

// Internals that the tests of package task_test reach.
var StandardJSON = standardJSON

const MaxSampleLine = maxSampleLine

// MaxFolderEntries is the bound on a samples folder's entries, which a
// test may lower.
var MaxFolderEntries = &maxFolderEntries
