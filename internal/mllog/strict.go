package mllog

import (
	"fmt"
	"math"
	"strings"
)

// strictChecks adds what the upstream checker does not verify.
func (e *engine) strictChecks(res *Result) {
	add := func(rule string, line int, format string, args ...any) {
		if !e.room(rule) {
			return
		}
		e.fixed = append(e.fixed, Finding{Rule: rule, Severity: SeverityError, Source: SourceStrict, Line: line, Message: fmt.Sprintf(format, args...)})
	}

	// 1. The record format, exactly.
	for i := range e.log.Records {
		r := &e.log.Records[i]
		if len(r.Deviations) > 0 {
			add("strict/format", r.Line, "%s", strings.Join(r.Deviations, "; "))
		}
	}

	// The first run_start and run_stop in file order.
	var start, stop *Record
	for i := range e.log.Records {
		r := &e.log.Records[i]
		if r.Problem != nil {
			continue
		}
		if r.Key == "run_start" && start == nil {
			start = r
		}
		if r.Key == "run_stop" && stop == nil {
			stop = r
		}
	}

	// 2. The run must have succeeded.
	if stop != nil {
		st, err := pySubscript(stop.Metadata, "status")
		if s, ok := st.Str(); err != nil || !ok || s != "success" {
			got := "missing"
			if err == nil {
				got = st.String()
			}
			add("strict/run_stop_status", stop.Line, "run_stop status is %s, not \"success\"", got)
		}
	}
	if start == nil || stop == nil {
		return // the checker's own findings say what is missing
	}
	if stop.Index < start.Index {
		add("strict/order", stop.Line, "run_stop (line %d) comes before run_start (line %d)", stop.Line, start.Line)
		return
	}
	if !(stop.TimeMS >= start.TimeMS) {
		add("strict/run_stop_time", stop.Line, "run_stop is dated %s, before run_start (%s)", fmtMS(stop.TimeMS), fmtMS(start.TimeMS))
	}

	// 3. A passing accuracy between run_start and run_stop, in file order.
	target, ok := e.rs.target[res.Division+"/"+res.Benchmark]
	if !ok {
		return // unknown benchmark or division: already an error
	}
	var pass, after *Record
	for i := range e.log.Records {
		r := &e.log.Records[i]
		if r.Problem != nil || r.Key != "eval_accuracy" || r.Index < start.Index {
			continue
		}
		if ok, err := target.reached(r.Value); err != nil || !ok {
			continue
		}
		if r.Index < stop.Index {
			pass = r
			break
		}
		if after == nil {
			after = r
		}
	}
	if pass == nil {
		msg := fmt.Sprintf("no eval_accuracy %s is logged between run_start (line %d) and run_stop (line %d)", target, start.Line, stop.Line)
		if after != nil {
			msg += fmt.Sprintf("; the first one comes after run_stop, at line %d", after.Line)
		}
		add("strict/accuracy_order", stop.Line, "%s", msg)
		return
	}

	// 4. run_stop's time must be consistent with the passing evaluation.
	if res.Benchmark != "minigo" {
		if pass.TimeMS > stop.TimeMS {
			add("strict/run_stop_time", stop.Line, "run_stop is dated %s, before the passing eval_accuracy at line %d (%s)",
				fmtMS(stop.TimeMS), pass.Line, fmtMS(pass.TimeMS))
		}
		return
	}
	// MiniGo evaluates the saved generations after training and back-dates
	// run_stop to when the first winning model was saved, so the passing
	// eval_accuracy is later than run_stop by design. The eval epoch_num n
	// numbers the models from 1 in training order; model n is the product
	// of the n-th training generation, so n-1 generations (epoch_stop
	// records) must have finished by the time run_stop claims.
	n, ok := positiveInt(pass.Metadata)
	if !ok {
		add("strict/minigo_generation", pass.Line, "passing eval_accuracy has no positive integer epoch_num to tie it to a training generation")
		return
	}
	done := 0
	for i := range e.log.Records {
		r := &e.log.Records[i]
		if r.Problem == nil && r.Key == "epoch_stop" && r.Index > start.Index && r.Index < stop.Index && r.TimeMS <= stop.TimeMS {
			done++
		}
	}
	if int64(done) < n-1 {
		add("strict/minigo_generation", stop.Line,
			"run_stop is dated %.3f min after run_start, when only %d training generations had finished; the first winning model (eval epoch_num %d) needs %d",
			(stop.TimeMS-start.TimeMS)/60000, done, n, n-1)
	}
}

// positiveInt returns metadata epoch_num when it is a positive integer
// (an int, or a float with no fraction).
func positiveInt(md Value) (int64, bool) {
	v, err := pySubscript(md, "epoch_num")
	if err != nil {
		return 0, false
	}
	if i, ok := v.Int64(); ok && i > 0 {
		return i, true
	}
	if f, ok := v.Float64(); ok && v.kind == Float && f >= 1 && f < 1<<53 && f == math.Trunc(f) {
		return int64(f), true
	}
	return 0, false
}

func fmtMS(ms float64) string { return fmt.Sprintf("%.0f ms", ms) }
