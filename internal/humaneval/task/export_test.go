package task

// Internals that the tests of package task_test reach.
var StandardJSON = standardJSON

const MaxSampleLine = maxSampleLine
