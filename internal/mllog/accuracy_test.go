package mllog

import (
	"context"
	"strings"
	"testing"
)

// TestAccuracySeries: the eval_accuracy series of a real MiniGo result log
// is kept in file order with its epochs, and the first point that reaches
// the target is the one the time to train ends on.
func TestAccuracySeries(t *testing.T) {
	minigo, dlrm := realLogs(t)
	rep, err := VerifyFiles(context.Background(), []string{minigo[0], dlrm[0]}, Limits{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Files {
		if len(r.Accuracy) < 2 || r.Target == "" || r.TargetValue == nil || r.AccuracyDropped != 0 {
			t.Fatalf("series: %d points, target %q %v", len(r.Accuracy), r.Target, r.TargetValue)
		}
		reached := 0
		for i, p := range r.Accuracy {
			if p.Epoch == nil || i > 0 && p.Line <= r.Accuracy[i-1].Line {
				t.Fatalf("point %d: %+v", i, p)
			}
			if p.Reached != (p.Value >= *r.TargetValue) {
				t.Errorf("point %d: %+v against target %s", i, p, r.Target)
			}
			if p.Reached {
				reached++
			}
		}
		if reached == 0 {
			t.Errorf("a compliant log never reaches its target: %+v", r.Accuracy)
		}
	}
}

func TestAccuracySeriesBounded(t *testing.T) {
	lines := readLogText(t, minigoLog(t)).String()
	for i := 0; i < MaxAccuracyPoints+5; i++ {
		lines += `:::MLLOG {"key": "eval_accuracy", "value": 0.1, "time_ms": 2, "metadata": {"epoch_num": 1}}` + "\n"
	}
	l, err := Parse(strings.NewReader(lines), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Check(l, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Accuracy) != MaxAccuracyPoints || r.AccuracyDropped < 5 {
		t.Fatalf("%d points kept, %d dropped", len(r.Accuracy), r.AccuracyDropped)
	}
}

func minigoLog(t *testing.T) string {
	minigo, _ := realLogs(t)
	return minigo[0]
}
