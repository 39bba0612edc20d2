package mllog

import "math"

// MaxAccuracyPoints bounds the eval_accuracy series kept per log; a log
// with more keeps the first ones and counts the rest in
// Result.AccuracyDropped.
const MaxAccuracyPoints = 4096

// AccuracyPoint is one eval_accuracy record of a log, in file order.
type AccuracyPoint struct {
	Line int `json:"line"`
	// Epoch is the record's metadata epoch_num (for MiniGo the model
	// generation), nil when it has none that is a finite number.
	Epoch *float64 `json:"epoch,omitempty"`
	// Value is the accuracy; Reached says whether it meets the target.
	Value   float64 `json:"value"`
	Reached bool    `json:"reached"`
}

// describeAccuracy fills res's accuracy series and quality target from
// the log's well-formed eval_accuracy records with a finite numeric value.
func (e *engine) describeAccuracy(res *Result) {
	target, ok := e.rs.target[res.Division+"/"+res.Benchmark]
	if ok {
		res.Target = target.String()
		t := target.max
		if target.hasMin {
			t = target.min
		}
		res.TargetValue = finite(t)
	}
	for i := range e.log.Records {
		r := &e.log.Records[i]
		if r.Problem != nil || r.Key != "eval_accuracy" {
			continue
		}
		v, isNum := r.Value.Float64()
		if !isNum || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if len(res.Accuracy) >= MaxAccuracyPoints {
			res.AccuracyDropped++
			continue
		}
		p := AccuracyPoint{Line: r.Line, Value: v}
		if ep, err := pySubscript(r.Metadata, "epoch_num"); err == nil {
			if f, ok := ep.Float64(); ok {
				p.Epoch = finite(f)
			}
		}
		if ok {
			p.Reached, _ = target.reached(r.Value)
		}
		res.Accuracy = append(res.Accuracy, p)
	}
}
