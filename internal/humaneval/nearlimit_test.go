package humaneval

import "testing"

func TestNearLimit(t *testing.T) {
	j := &job{Limits: []float64{4, 4, 4}, FirstExtra: 4}
	for _, c := range []struct {
		name  string
		gaps  []float64
		res   PhaseResult
		end   jobEnd
		want  string
		limit float64
	}{
		{"fast pass", []float64{0.1, 0.2, 0.1}, PhaseResult{Status: StatusPass}, jobEnd{Status: endDone}, "", 13},
		{"input near its limit", []float64{0.1, 3.3, 0.1}, PhaseResult{Status: StatusPass}, jobEnd{Status: endDone},
			"passed near the limit: input 1 used 3.30 of 4.00 CPU s (82%)", 13},
		{"input 0 has the import allowance", []float64{6.9, 0.1, 0.1}, PhaseResult{Status: StatusPass}, jobEnd{Status: endDone},
			"passed near the limit: input 0 used 6.90 of 8.00 CPU s (86%)", 13},
		{"list near its limit", []float64{3, 3, 3}, PhaseResult{Status: StatusPass}, jobEnd{Status: endDone},
			"passed near the limit: the list used 9.00 of 10.00 CPU s (90%)", 10},
		{"per-input limit", []float64{0.1}, PhaseResult{Status: StatusFail}, jobEnd{Status: endTimeout, Records: 1, Detail: "input 1 used more than 4.00 s of CPU time"},
			"stopped at the limit: input 1 used more than 4.00 CPU s", 13},
		{"list limit", []float64{3, 3}, PhaseResult{Status: StatusTimeout}, jobEnd{Status: endTimeout, Records: 2, Detail: "the list used more than 10.0 s of CPU time"},
			"stopped at the limit: the list used more than 10.00 CPU s", 10},
		{"fail", []float64{3.9}, PhaseResult{Status: StatusFail}, jobEnd{Status: "stopped"}, "", 13},
	} {
		tl := newCPUTally(j)
		for k, g := range c.gaps {
			tl.add(k, g)
		}
		n := tl.near(c.res, c.end, c.limit)
		got := ""
		if n != nil {
			got = n.String()
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestTimeoutStatus(t *testing.T) {
	for _, c := range []struct {
		end  jobEnd
		want Status
	}{
		{jobEnd{Records: 3, Detail: "input 3 used more than 4.00 s of CPU time"}, StatusFail},
		{jobEnd{Records: 3, Detail: "input 3 was idle (sleeping or blocked) for more than 12.0 s"}, StatusFail},
		{jobEnd{Records: 0, Detail: "input 0 used more than 8.00 s of CPU time"}, StatusTimeout},
		{jobEnd{Records: 0, Called: true, Detail: "input 0 used more than 8.00 s of CPU time"}, StatusFail},
		{jobEnd{Records: 0, Called: true, Detail: "input 0 was idle (sleeping or blocked) for more than 24.0 s"}, StatusFail},
		{jobEnd{Records: 0, Called: true, Detail: "the list used more than 61.0 s of CPU time"}, StatusTimeout},
		{jobEnd{Records: 0, Called: true, Detail: "the job used 70.00 s of CPU time as the host measures its container, over the 69.00 s its limits allow"}, StatusTimeout},
		{jobEnd{Records: 3, Detail: "the list used more than 61.0 s of CPU time"}, StatusTimeout},
		{jobEnd{Records: 3, Detail: "input 2 used more than 4.00 s of CPU time"}, StatusTimeout},
	} {
		if got := timeoutStatus(c.end); got != c.want {
			t.Errorf("%q: %s, want %s", c.end.Detail, got, c.want)
		}
	}
}
