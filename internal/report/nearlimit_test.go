package report

import (
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench"
)

// A task whose verdict depends on the time limit is named, with its CPU
// seconds against the limit, from the results file's near_limit fields.
func TestNearLimitRows(t *testing.T) {
	pass := codebench.StatusPass
	near := &codebench.NearLimit{Status: pass, Input: 1, CPU: 3.5, Limit: 4}
	rows := []TaskRow{
		taskRow("Mbpp/2", []codebench.ResultEntry{{BaseStatus: pass, PlusStatus: &pass}}),
		taskRow("Mbpp/123", []codebench.ResultEntry{{BaseStatus: pass, PlusStatus: &pass, PlusNearLimit: near}}),
	}
	got := nearLimitRows(rows)
	if len(got) != 1 || got[0].Task != "Mbpp/123" {
		t.Fatalf("near-limit rows %+v", got)
	}
	if want := "plus: passed near the limit: input 1 used 3.50 of 4.00 CPU s (88%)"; got[0].NearLimit != want {
		t.Errorf("%q, want %q", got[0].NearLimit, want)
	}
	if !strings.Contains(got[0].NearLimit, "CPU s") {
		t.Error("no CPU seconds")
	}
}

// A rechecked verdict shows both measurements and which run decided.
func TestNearLimitRowsRecheck(t *testing.T) {
	pass, timeout := codebench.StatusPass, codebench.StatusTimeout
	near := &codebench.NearLimit{Status: timeout, Input: -1, CPU: 13, Limit: 13, DecidedBy: codebench.DecidedByRecheck,
		Recheck: &codebench.NearLimit{Status: pass, Input: -1, CPU: 11.05, Limit: 13}}
	rows := []TaskRow{taskRow("HumanEval/0", []codebench.ResultEntry{{BaseStatus: pass, BaseNearLimit: near}})}
	got := nearLimitRows(rows)
	if len(got) != 1 {
		t.Fatalf("near-limit rows %+v", got)
	}
	if want := "base: stopped at the limit: the list used more than 13.00 CPU s; re-run: pass, the list used 11.05 of 13.00 CPU s (85%); the re-run decides"; got[0].NearLimit != want {
		t.Errorf("%q, want %q", got[0].NearLimit, want)
	}
}
