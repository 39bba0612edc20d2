package handoff

import (
	"bytes"
	"strings"
	"testing"
	"unicode"

	"github.com/reprolab/repro/internal/mllog"
)

// TestIngestTextEscapesOutsideText writes an ingest record whose every
// string came from the cluster carrying terminal controls, a newline and
// bidirectional controls: the text shows them escaped, one line each.
func TestIngestTextEscapesOutsideText(t *testing.T) {
	const h = "\nFORGED verdict ok\r\x1b[2J\x1b]0;t\x07\u0085\u009b1A\u202e\u2066"
	mins := 1.5
	rec := &IngestRecord{
		ID: "handoff-minigo-1" + h, Workload: "minigo" + h, ManifestDigest: h, Verdict: Verdict("ok" + h),
		Preflight: []ReportSummary{{File: "pre" + h, Mode: PreflightMode("full" + h), Host: "node" + h, Result: CheckStatus("pass" + h)}},
		Runs:      []RunRecord{{Index: 0, Seed: 1, File: "r" + h, Host: "node" + h, Compliant: true, Minutes: &mins}},
		Score:     &mllog.SetScore{Note: "note" + h},
		Problems:  []string{"problem" + h},
		RunID:     "run" + h, RunDir: "/runs/x" + h,
	}
	var out, problems bytes.Buffer
	rec.WriteText(&out, &problems)
	for name, text := range map[string]string{"text": out.String(), "problems": problems.String()} {
		for _, r := range text {
			if r != '\n' && (unicode.IsControl(r) || r == 0x202e || r == 0x2066) {
				t.Errorf("%s: %U reaches the terminal:\n%q", name, r, text)
				break
			}
		}
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "FORGED") {
				t.Errorf("%s: a forged line:\n%q", name, text)
			}
		}
		if !strings.Contains(text, `\x1b[2J`) {
			t.Errorf("%s: the outside text is not shown escaped:\n%s", name, text)
		}
	}
}
