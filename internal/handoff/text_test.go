package handoff

import (
	"bytes"
	"strings"
	"testing"
)

func TestIngestRecordText(t *testing.T) {
	m := 12.5
	rec := &IngestRecord{ID: "i1", Workload: "minigo", ManifestDigest: "ab", Verdict: VerdictNegative,
		Runs:     []RunRecord{{Index: 0, Seed: 7, File: "result_0.txt", Compliant: true, Minutes: &m}, {Index: 1, Seed: 8, File: "result_1.txt"}, {Index: 2, Seed: 9}},
		Problems: []string{"run 2: missing"}, RunID: "r1", RunDir: "/runs/r\n1"}
	var out, problems bytes.Buffer
	rec.WriteText(&out, &problems)
	for _, want := range []string{"i1: minigo, manifest sha256:ab, verdict " + string(VerdictNegative), "run 0 seed 7: compliant, 12.50 min", "run 1 seed 8: not compliant\n",
		"run 2 seed 9: missing", `in "/runs/r\n1"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
	if problems.String() != "  problem: run 2: missing\n" {
		t.Errorf("problems %q", problems.String())
	}
}
