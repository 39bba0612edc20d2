package runindex

import "time"

// Test helpers for the external test package.
var WriteRun = writeRun

type FakeRun = fakeRun

// NewFakeRun describes a synthetic run of kind that started n hours after
// the synthetic base time, with status ok.
func NewFakeRun(kind string, n int) FakeRun {
	return fakeRun{kind: kind, at: base.Add(time.Duration(n) * time.Hour), status: "ok"}
}
