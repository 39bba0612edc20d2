package mllog

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Options select the rules Check applies.
type Options struct {
	// Benchmark, when set ("minigo" or "dlrm"), is the benchmark the log
	// must declare in submission_benchmark. Empty: whatever it declares.
	Benchmark string
	// Ruleset is the MLPerf Training rules version; empty means "2.1.0",
	// the only one supported.
	Ruleset string
	// Strict adds checks the upstream checker lacks: identical repeats of
	// exactly-once keys fail (upstream --werror), run_stop status must be
	// "success", a passing eval_accuracy must lie between run_start and
	// run_stop in file order and be consistent with run_stop's time, and
	// every record must follow the MLLOG format exactly.
	Strict bool
}

// Benchmarks lists the benchmarks whose rules repro implements.
func Benchmarks() []string { return []string{"dlrm", "minigo"} }

// Check returns the error VerifyFiles would give for unsupported options.
func (o Options) Check() error {
	_, err := o.resolve()
	return err
}

func (o Options) resolve() (*ruleset, error) {
	v := o.Ruleset
	if v == "" {
		v = "2.1.0"
	}
	rs := rulesets[v]
	if rs == nil {
		return nil, fmt.Errorf("ruleset %q is not supported (supported: %s)", v, strings.Join(Rulesets(), ", "))
	}
	if o.Benchmark != "" && rs.requiredRuns[o.Benchmark] == 0 {
		return nil, fmt.Errorf("benchmark %q is not supported (supported: %s)", o.Benchmark, strings.Join(Benchmarks(), ", "))
	}
	return rs, nil
}

// Severity grades a finding. Only errors make a log non-compliant.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Finding sources.
const (
	// SourceChecker: a rule of the upstream compliance checker.
	SourceChecker = "checker"
	// SourceStrict: a check --strict adds.
	SourceStrict = "strict"
	// SourceRepro: a condition of repro itself (limits, --benchmark,
	// unimplemented rules).
	SourceRepro = "repro"
)

// Finding is one reason a log is non-compliant, or a warning.
type Finding struct {
	// Rule identifies the rule, e.g. "common/run_stop/count",
	// "closed_dlrm/eval_accuracy/target", "parse/syntax",
	// "strict/run_stop_status". Identifiers are stable.
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	Source   string   `json:"source"`
	// Line is the 1-based line in the file, 0 for the file as a whole.
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

// Result is the verdict on one log.
type Result struct {
	File      string `json:"file"`
	Benchmark string `json:"benchmark,omitempty"`
	Division  string `json:"division,omitempty"`
	// Compliant is true when no finding is an error.
	Compliant bool `json:"compliant"`
	Records   int  `json:"records"`
	// Status is run_stop's metadata status, when it is a string.
	Status string `json:"run_stop_status,omitempty"`
	// RunStartMS and RunStopMS are the timestamps the result summarizer
	// uses; Minutes is its time to train, (stop-start)/60000. They are
	// set whenever the log has both records, compliant or not; only
	// compliant runs count in a score.
	RunStartMS *float64  `json:"run_start_ms,omitempty"`
	RunStopMS  *float64  `json:"run_stop_ms,omitempty"`
	Minutes    *float64  `json:"minutes,omitempty"`
	Findings   []Finding `json:"findings"`
	// Target is the quality target of the log's division and benchmark
	// ("in [0.5, 1)"), and TargetValue the bound a chart draws (the lower
	// one, else the upper); empty for an unknown benchmark.
	Target      string   `json:"target,omitempty"`
	TargetValue *float64 `json:"target_value,omitempty"`
	// Accuracy is the eval_accuracy series of the log, at most
	// MaxAccuracyPoints of it; AccuracyDropped counts the rest.
	Accuracy        []AccuracyPoint `json:"accuracy,omitempty"`
	AccuracyDropped int             `json:"accuracy_dropped,omitempty"`
}

// Errors returns the findings that are errors.
func (r *Result) Errors() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Severity == SeverityError {
			out = append(out, f)
		}
	}
	return out
}

// maxFindingsPerRule caps repeated findings of one rule in a result.
const maxFindingsPerRule = 20

// Check verifies one parsed log. It fails only for unsupported options.
func Check(l *Log, opt Options) (*Result, error) {
	rs, err := opt.resolve()
	if err != nil {
		return nil, err
	}
	e := &engine{rs: rs, log: l, strict: opt.Strict, keyed: map[string][]Finding{}, warnings: map[string]Finding{}}
	res := &Result{File: l.Name, Records: l.RecordCount()}
	e.describe(res)
	e.describeAccuracy(res)
	e.run()
	if opt.Benchmark != "" && res.Benchmark != opt.Benchmark {
		got := "no benchmark"
		if res.Benchmark != "" {
			got = fmt.Sprintf("benchmark %q", res.Benchmark)
		}
		e.addFixed(Finding{Rule: "options/benchmark", Severity: SeverityError, Source: SourceRepro,
			Message: fmt.Sprintf("expected a %s log, but it declares %s in submission_benchmark", opt.Benchmark, got)})
	}
	if opt.Strict {
		e.strictChecks(res)
	}
	res.Findings = e.findings()
	res.Compliant = len(res.Errors()) == 0
	return res, nil
}

// engine runs one ruleset over one log the way upstream's
// ComplianceChecker does.
type engine struct {
	rs     *ruleset
	log    *Log
	strict bool
	queue  []string

	// Upstream keeps messages keyed by record key, and a rule file that
	// has a rule for a key erases what earlier files said about it.
	keyed    map[string][]Finding
	keyOrder []string
	fixed    []Finding
	warnings map[string]Finding
	crashed  bool
	// kept and dropped count, per rule, the findings of e.fixed stored
	// and those only counted (beyond maxFindingsPerRule), so a log of a
	// million bad lines costs a counter, not a million messages.
	kept    map[string]int
	dropped map[string]int
}

// room reports whether another fixed finding of rule is stored; when it
// is not, the finding is counted instead.
func (e *engine) room(rule string) bool {
	if e.kept == nil {
		e.kept, e.dropped = map[string]int{}, map[string]int{}
	}
	if e.kept[rule] >= maxFindingsPerRule {
		e.dropped[rule]++
		return false
	}
	e.kept[rule]++
	return true
}

// addFixed stores f unless its rule has enough findings already.
func (e *engine) addFixed(f Finding) {
	if e.room(f.Rule) {
		e.fixed = append(e.fixed, f)
	}
}

func (e *engine) addKeyed(key string, f Finding) {
	if _, ok := e.keyed[key]; !ok {
		e.keyOrder = append(e.keyOrder, key)
	}
	e.keyed[key] = append(e.keyed[key], f)
}

func (e *engine) erase(key string) {
	if _, ok := e.keyed[key]; ok {
		delete(e.keyed, key)
		for i, k := range e.keyOrder {
			if k == key {
				e.keyOrder = append(e.keyOrder[:i], e.keyOrder[i+1:]...)
				break
			}
		}
	}
}

// describe fills in what the log says about itself: the first string
// submission_benchmark and submission_division (the occurrences upstream
// acts on), run_stop's status, and the summarizer's timing.
func (e *engine) describe(res *Result) {
	var start, stop *Record
	for i := range e.log.Records {
		r := &e.log.Records[i]
		if r.Problem != nil {
			continue
		}
		switch r.Key {
		case "submission_benchmark":
			if s, ok := r.Value.Str(); ok && res.Benchmark == "" {
				res.Benchmark = s
			}
		case "submission_division":
			if s, ok := r.Value.Str(); ok && res.Division == "" {
				res.Division = s
			}
		case "run_stop":
			if res.Status == "" {
				if st, err := pySubscript(r.Metadata, "status"); err == nil {
					res.Status, _ = st.Str()
				}
			}
		}
	}
	// The summarizer's loop: the latest run_start and run_stop seen until
	// both have been seen.
	for i := range e.log.Records {
		r := &e.log.Records[i]
		if r.Problem != nil {
			continue
		}
		if r.Key == "run_start" {
			start = r
		}
		if r.Key == "run_stop" {
			stop = r
		}
		if start != nil && stop != nil {
			break
		}
	}
	if start != nil && stop != nil {
		res.RunStartMS = finite(start.TimeMS)
		res.RunStopMS = finite(stop.TimeMS)
		res.Minutes = finite((stop.TimeMS - start.TimeMS) / 60 / 1000)
		if stop.TimeMS < start.TimeMS {
			// The summarizer would score a negative time; the upstream
			// checker does not look at the times, so the verdict stays
			// its own (a warning), but the run gets no time and a score
			// counts it as dropped. --strict fails it
			// (strict/run_stop_time).
			res.Minutes = nil
			e.addFixed(Finding{Rule: "time/negative", Severity: SeverityWarning, Source: SourceRepro, Line: stop.Line,
				Message: fmt.Sprintf("run_stop (line %d, %s) is dated before run_start (line %d, %s): the time to train would be negative, so the run is not timed and a score counts it as dropped",
					stop.Line, fmtMS(stop.TimeMS), start.Line, fmtMS(start.TimeMS))})
		}
	}
}

func finite(f float64) *float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

func (e *engine) run() {
	usable := 0
	for _, r := range e.log.Records {
		if r.Problem == nil {
			usable++
			continue
		}
		e.addFixed(Finding{Rule: "parse/" + r.Problem.Kind.String(), Severity: SeverityError, Source: SourceChecker,
			Line: r.Line, Message: r.Problem.Msg})
		if r.Problem.Kind == ProblemShape && !e.crashed {
			// Upstream's parser raises on such a line: nothing is checked.
			e.crashed = true
		}
	}
	for k, n := range e.log.omitted {
		if n == 0 {
			continue
		}
		rule := "parse/" + ProblemKind(k).String()
		if e.dropped == nil {
			e.kept, e.dropped = map[string]int{}, map[string]int{}
		}
		e.dropped[rule] += n // counted only: Parse kept no message
		if ProblemKind(k) == ProblemShape {
			e.crashed = true
		}
	}
	if e.crashed {
		e.addFixed(Finding{Rule: "checker/crash", Severity: SeverityError, Source: SourceChecker,
			Message: "a record lacks a field the checker needs (or is not an object); the upstream checker stops with an exception on such a log, so no rule was applied"})
		return
	}
	if usable == 0 {
		e.addFixed(Finding{Rule: "common/no_records", Severity: SeverityError, Source: SourceChecker,
			Message: "no usable " + strings.TrimSpace(Marker) + " records in the file"})
	}
	e.queue = []string{"common"}
	for len(e.queue) > 0 && !e.crashed {
		name := e.queue[0]
		e.queue = e.queue[1:]
		f := e.rs.files[name]
		if f == nil {
			if e.rs.upstreamOnly[name] {
				e.addFixed(Finding{Rule: "ruleset/unimplemented", Severity: SeverityError, Source: SourceRepro,
					Message: fmt.Sprintf("the %s rules of ruleset %s are not implemented by repro, which verifies %s logs only", name, e.rs.version, strings.Join(Benchmarks(), " and "))})
				continue
			}
			e.addFixed(Finding{Rule: "checker/crash", Severity: SeverityError, Source: SourceChecker,
				Message: fmt.Sprintf("the log selects rule file %q, which does not exist; the upstream checker stops with an exception here", name)})
			e.crashed = true
			return
		}
		e.runFile(f)
	}
}

func (e *engine) runFile(f *ruleFile) {
	st := &ruleState{}
	st.enqueue = func(format string, v Value) {
		arg := v.String()
		if s, ok := v.Str(); ok {
			arg = s
		}
		e.queue = append(e.queue, fmt.Sprintf(format, arg))
	}
	if f.begin != nil {
		f.begin(st)
	}
	for _, k := range f.keys {
		e.erase(k.name)
	}
	rule := func(k *keyRule, what string) string { return f.name + "/" + k.name + "/" + what }

	reported := map[string][]*Record{}
	executed := map[string]bool{}
	type atLeastOne struct {
		hits int
		rule *keyRule
	}
	var atLeast []*atLeastOne
	atLeastByKey := map[string]*atLeastOne{}
	for i := range e.log.Records {
		r := &e.log.Records[i]
		if r.Problem != nil {
			continue
		}
		k := f.rule(r.Key)
		if k == nil {
			continue
		}
		reported[k.name] = append(reported[k.name], r)
		if !executed[k.name] {
			for _, c := range k.checks {
				ok, err := c.fn(st, r)
				switch {
				case err != nil:
					e.addKeyed(k.name, Finding{Rule: rule(k, "check"), Severity: SeverityError, Source: SourceChecker, Line: r.Line,
						Message: fmt.Sprintf("%s: %s (value %s, metadata %s has the wrong type)", k.name, c.what, short(r.Value), short(r.Metadata))})
				case !ok:
					e.addKeyed(k.name, Finding{Rule: rule(k, "check"), Severity: SeverityError, Source: SourceChecker, Line: r.Line,
						Message: fmt.Sprintf("%s: %s (value %s)", k.name, c.what, short(r.Value))})
				}
			}
			if k.post != nil {
				if err := k.post(st, r); err != nil {
					e.addKeyed(k.name, Finding{Rule: rule(k, "post"), Severity: SeverityError, Source: SourceChecker, Line: r.Line,
						Message: fmt.Sprintf("%s: the rule's bookkeeping failed on metadata %s", k.name, short(r.Metadata))})
				}
			}
		}
		if k.atLeastOne != nil {
			a := atLeastByKey[k.name]
			if a == nil {
				a = &atLeastOne{rule: k}
				atLeastByKey[k.name] = a
				atLeast = append(atLeast, a)
			}
			ok, err := k.atLeastOne.fn(st, r)
			if err != nil {
				e.addFixed(Finding{Rule: "checker/crash", Severity: SeverityError, Source: SourceChecker, Line: r.Line,
					Message: fmt.Sprintf("%s value %s cannot be compared with the target; the upstream checker stops with an exception here", k.name, short(r.Value))})
				e.crashed = true
				return
			}
			if ok {
				a.hits++
			}
		}
		if strings.Contains(k.name, "submission_") {
			// Upstream checks submission_* records on first sight only.
			executed[k.name] = true
		}
	}
	for _, a := range atLeast {
		if a.hits == 0 {
			e.addFixed(Finding{Rule: f.name + "/" + a.rule.name + "/target", Severity: SeverityError, Source: SourceChecker,
				Message: a.rule.atLeastOne.what + "; none is"})
		}
	}

	seenAlts := map[string]bool{}
	for i := range f.keys {
		k := &f.keys[i]
		recs := reported[k.name]
		switch k.req {
		case reqExactlyOne:
			if len(recs) == 1 {
				break
			}
			if len(recs) > 1 && allSame(recs) {
				fd := Finding{Rule: rule(k, "count"), Severity: SeverityWarning, Source: SourceChecker, Line: recs[1].Line,
					Message: fmt.Sprintf("expected exactly one %s record, found %d with the same value (upstream only warns; --strict fails)", k.name, len(recs))}
				if e.strict {
					fd.Severity = SeverityError
					fd.Source = SourceStrict
					fd.Rule = "strict/duplicate"
					e.addKeyed(k.name, fd)
				} else {
					e.warnings[k.name] = fd
				}
				break
			}
			fd := Finding{Rule: rule(k, "count"), Severity: SeverityError, Source: SourceChecker,
				Message: fmt.Sprintf("expected exactly one %s record, found %d", k.name, len(recs))}
			if len(recs) > 1 {
				fd.Line = recs[1].Line
				fd.Message += " with different values"
			}
			e.addKeyed(k.name, fd)
		case reqAtLeastOne:
			if len(recs) == 0 {
				e.addKeyed(k.name, Finding{Rule: rule(k, "count"), Severity: SeverityError, Source: SourceChecker,
					Message: fmt.Sprintf("expected at least one %s record, found none", k.name)})
			}
		case reqAtLeastOneOr:
			names := append([]string{k.name}, k.alts...)
			sort.Strings(names)
			id := strings.Join(names, ",")
			if seenAlts[id] {
				break
			}
			seenAlts[id] = true
			any := false
			for _, n := range names {
				any = any || len(reported[n]) > 0
			}
			if !any {
				e.addFixed(Finding{Rule: f.name + "/" + strings.Join(names, "|") + "/count", Severity: SeverityError, Source: SourceChecker,
					Message: fmt.Sprintf("expected at least one %s record, found none", strings.Join(names, " or "))})
			}
		}
	}
	for _, c := range f.end {
		if ok, err := c.fn(st); err != nil || !ok {
			e.addFixed(Finding{Rule: f.name + "/end", Severity: SeverityError, Source: SourceChecker, Message: c.what})
		}
	}
}

func allSame(recs []*Record) bool {
	vals := make([]Value, len(recs))
	for i, r := range recs {
		vals[i] = r.Value
	}
	return pyAllSame(vals)
}

// short renders a value for a message, cut to a readable length.
func short(v Value) string {
	if v.lazy() {
		return shortText(v.s, 80)
	}
	s := v.String()
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// findings returns everything found, in line order (file-level findings
// last), with at most maxFindingsPerRule per rule.
func (e *engine) findings() []Finding {
	var all []Finding
	for _, k := range e.keyOrder {
		all = append(all, e.keyed[k]...)
	}
	all = append(all, e.fixed...)
	for _, f := range e.warnings {
		all = append(all, f)
	}
	sort.SliceStable(all, func(i, j int) bool {
		li, lj := all[i].Line, all[j].Line
		if (li == 0) != (lj == 0) {
			return lj == 0
		}
		if li != lj {
			return li < lj
		}
		return all[i].Rule < all[j].Rule
	})
	out := make([]Finding, 0, len(all))
	count, shown := map[string]int{}, map[string]int{}
	for _, f := range all {
		count[f.Rule]++
		if count[f.Rule] <= maxFindingsPerRule {
			out = append(out, f)
			shown[f.Rule]++
		}
	}
	for rule, n := range e.dropped {
		count[rule] += n
	}
	rules := make([]string, 0, len(count))
	for rule := range count {
		rules = append(rules, rule)
	}
	sort.Strings(rules)
	for _, rule := range rules {
		if n := count[rule]; n > shown[rule] {
			sev := SeverityWarning
			if strings.HasPrefix(rule, "parse/") {
				sev = SeverityError
			}
			for _, f := range all {
				if f.Rule == rule {
					sev = f.Severity
					break
				}
			}
			out = append(out, Finding{Rule: rule, Severity: sev, Source: SourceRepro,
				Message: fmt.Sprintf("%d more findings of this rule not shown", n-shown[rule])})
		}
	}
	if out == nil {
		out = []Finding{}
	}
	return out
}
