package mllog

import "fmt"

// This file states the MLPerf Training 2.1.0 compliance rules of
// mlcommons/logging (compliance_checker/training_2.1.0/*.yaml) as Go
// values. The facts are upstream's; the encoding is ours. docs/mllog.md
// lists every rule and where repro departs from upstream.

// req is a key's occurrence requirement.
type req int

const (
	reqNone         req = iota // no requirement (a record that only overrides messages)
	reqExactlyOne              // EXACTLY_ONE: identical repeats only warn
	reqAtLeastOne              // AT_LEAST_ONE
	reqAtLeastOneOr            // AT_LEAST_ONE_OR(alternatives)
)

// cond is one rule expression over the rule file's state and a record. An
// error stands for a Python exception while evaluating it.
type cond struct {
	what string // what must hold, for messages
	fn   func(s *ruleState, r *Record) (bool, error)
}

// keyRule is the rule for one key within one rule file.
type keyRule struct {
	name   string
	req    req
	alts   []string // for reqAtLeastOneOr
	checks []cond   // CHECK: each must hold on every occurrence
	post   func(s *ruleState, r *Record) error
	// atLeastOne (ATLEAST_ONE_CHECK) must hold on at least one
	// occurrence; an exception while evaluating it aborts the checker.
	atLeastOne *cond
}

// endCond is a check on the state after all records.
type endCond struct {
	what string
	fn   func(s *ruleState) (bool, error)
}

// ruleFile is one upstream YAML file.
type ruleFile struct {
	name  string
	begin func(s *ruleState)
	keys  []keyRule
	end   []endCond
}

func (f *ruleFile) rule(key string) *keyRule {
	for i := range f.keys {
		if f.keys[i].name == key {
			return &f.keys[i]
		}
	}
	return nil
}

// ruleState is the state a rule file's expressions share (upstream: the
// dict s, fresh for every file).
type ruleState struct {
	initStarted, initStopped, runStarted, runStopped bool
	firstInitStart                                   float64
	compileTimeMins                                  float64
	initializedTensors                               []Value
	enqueue                                          func(name string, v Value)
}

// ruleset is a set of rule files; checking starts at "common", and rule
// files name the next ones to run.
type ruleset struct {
	version string
	files   map[string]*ruleFile
	// upstreamOnly names rule files that exist upstream but that repro
	// does not implement (other benchmarks).
	upstreamOnly map[string]bool
	// target is the quality a run must reach, per division and benchmark
	// ("closed/minigo"), as the rule files' at-least-one check on
	// eval_accuracy states it.
	target map[string]accuracyTarget
	// requiredRuns is the number of result files a benchmark needs for an
	// official score (mlperf_logging/benchmark_meta.py).
	requiredRuns map[string]int
}

// accuracyTarget is a half-open or open interval on eval_accuracy.
type accuracyTarget struct {
	min    float64 // inclusive; NaN means no lower bound
	max    float64 // exclusive
	hasMin bool
}

func (t accuracyTarget) String() string {
	if t.hasMin {
		return fmt.Sprintf("in [%g, %g)", t.min, t.max)
	}
	return fmt.Sprintf("below %g", t.max)
}

// reached evaluates the target on a value; an error is a TypeError.
func (t accuracyTarget) reached(v Value) (bool, error) {
	if t.hasMin {
		ok, err := pyGE(v, t.min)
		if err != nil || !ok {
			return false, err
		}
	}
	return pyLT(v, t.max)
}

// Conditions shared by several keys.
var (
	valueNotEmpty = cond{"value must not be the empty string", func(_ *ruleState, r *Record) (bool, error) {
		return !pyEqStr(r.Value, ""), nil
	}}
	hasEpochNum        = metadataHas("epoch_num")
	hasFirstEpochNum   = metadataHas("first_epoch_num")
	hasEpochCount      = metadataHas("epoch_count")
	alwaysHasValue     = cond{"record must have a value", func(*ruleState, *Record) (bool, error) { return true, nil }}
	benchmarksV21      = []string{"resnet", "ssd", "maskrcnn", "minigo", "dlrm", "bert", "rnnt", "unet3d"}
	divisions          = []string{"closed", "open"}
	submissionStatuses = []string{"cloud", "onprem", "preview", "research"}
)

func metadataHas(name string) cond {
	return cond{"metadata must have " + name, func(_ *ruleState, r *Record) (bool, error) {
		return pyContains(r.Metadata, name)
	}}
}

func valueIn(set []string) cond {
	return cond{fmt.Sprintf("value must be one of %q", set), func(_ *ruleState, r *Record) (bool, error) {
		for _, s := range set {
			if pyEqStr(r.Value, s) {
				return true, nil
			}
		}
		return false, nil
	}}
}

func valueGE(c float64) cond {
	return cond{fmt.Sprintf("value must be at least %g", c), func(_ *ruleState, r *Record) (bool, error) { return pyGE(r.Value, c) }}
}

func valueEq(c float64) cond {
	return cond{fmt.Sprintf("value must equal %g", c), func(_ *ruleState, r *Record) (bool, error) { return pyEqNum(r.Value, c), nil }}
}

func exactlyOne(names ...string) []keyRule {
	out := make([]keyRule, len(names))
	for i, n := range names {
		out[i] = keyRule{name: n, req: reqExactlyOne}
	}
	return out
}

func accuracyRule(t accuracyTarget) keyRule {
	return keyRule{
		name:       "eval_accuracy",
		req:        reqAtLeastOne,
		checks:     []cond{hasEpochNum},
		atLeastOne: &cond{"some eval_accuracy must be " + t.String(), func(_ *ruleState, r *Record) (bool, error) { return t.reached(r.Value) }},
	}
}

// enqueueByValue returns a POST action that names the next rule file
// after the record's value, as upstream's enqueue_config does.
func enqueueByValue(format string) func(s *ruleState, r *Record) error {
	return func(s *ruleState, r *Record) error {
		s.enqueue(format, r.Value)
		return nil
	}
}

var ruleset210 = newRuleset210()

func newRuleset210() *ruleset {
	closedMinigo := accuracyTarget{min: 0.5, max: 1.0, hasMin: true}
	closedDLRM := accuracyTarget{min: 0.8025, max: 1.0, hasMin: true}
	open := accuracyTarget{max: 1.0}

	common := &ruleFile{
		name: "common",
		begin: func(s *ruleState) {
			s.firstInitStart = 9e99
		},
		keys: []keyRule{
			{name: "submission_org", req: reqExactlyOne, checks: []cond{valueNotEmpty}},
			{name: "submission_platform", req: reqExactlyOne, checks: []cond{valueNotEmpty}},
			{name: "submission_division", req: reqExactlyOne, checks: []cond{valueIn(divisions)},
				post: func(s *ruleState, r *Record) error {
					s.enqueue("%s_common", r.Value)
					if pyEqStr(r.Value, "open") {
						s.compileTimeMins = 240
					} else {
						s.compileTimeMins = 30
					}
					return nil
				}},
			{name: "submission_status", req: reqExactlyOne, checks: []cond{valueIn(submissionStatuses)}},
			{name: "cache_clear", req: reqAtLeastOne, checks: []cond{alwaysHasValue}},
			{name: "init_start", req: reqAtLeastOne,
				checks: []cond{
					{"init_start must not follow init_stop", func(s *ruleState, _ *Record) (bool, error) { return !s.initStopped, nil }},
					{"init_start must not follow run_start", func(s *ruleState, _ *Record) (bool, error) { return !s.runStarted, nil }},
				},
				post: func(s *ruleState, r *Record) error {
					s.initStarted = true
					if r.TimeMS < s.firstInitStart {
						s.firstInitStart = r.TimeMS
					}
					return nil
				}},
			{name: "init_stop", req: reqExactlyOne,
				checks: []cond{
					{"init_stop must follow an init_start", func(s *ruleState, _ *Record) (bool, error) { return s.initStarted, nil }},
					{"init_stop must come before run_start", func(s *ruleState, _ *Record) (bool, error) { return !s.runStarted, nil }},
					{"init_stop must come within the division's initialization time (30 min closed, 240 min open, after a submission_division record) of the first init_start",
						func(s *ruleState, r *Record) (bool, error) {
							return r.TimeMS-s.firstInitStart < s.compileTimeMins*60*1e3, nil
						}},
				},
				post: func(s *ruleState, _ *Record) error { s.initStopped = true; return nil }},
			{name: "run_start", req: reqExactlyOne,
				checks: []cond{{"run_start must follow init_stop", func(s *ruleState, _ *Record) (bool, error) { return s.initStopped, nil }}},
				post:   func(s *ruleState, _ *Record) error { s.runStarted = true; return nil }},
			{name: "run_stop", req: reqExactlyOne,
				checks: []cond{
					{"run_stop must follow run_start", func(s *ruleState, _ *Record) (bool, error) { return s.runStarted, nil }},
					metadataHas("status"),
				},
				post: func(s *ruleState, _ *Record) error { s.runStopped = true; return nil }},
			{name: "block_start", req: reqAtLeastOneOr, alts: []string{"epoch_start"},
				checks: []cond{
					{"block_start must follow run_start", func(s *ruleState, _ *Record) (bool, error) { return s.runStarted, nil }},
					hasEpochCount,
					hasFirstEpochNum,
					{"metadata epoch_count must be positive", func(_ *ruleState, r *Record) (bool, error) {
						v, err := pySubscript(r.Metadata, "epoch_count")
						if err != nil {
							return false, err
						}
						return pyGT(v, 0)
					}},
				}},
			{name: "block_stop", req: reqAtLeastOneOr, alts: []string{"epoch_stop"}, checks: []cond{hasFirstEpochNum}},
			{name: "epoch_start", req: reqAtLeastOneOr, alts: []string{"block_start"}, checks: []cond{hasEpochNum}},
			{name: "epoch_stop", req: reqAtLeastOneOr, alts: []string{"block_stop"}, checks: []cond{hasEpochNum}},
			{name: "eval_start", req: reqAtLeastOneOr, alts: []string{"block_start"}, checks: []cond{hasEpochNum}},
			{name: "eval_stop", req: reqAtLeastOneOr, alts: []string{"block_stop"}, checks: []cond{hasEpochNum}},
			{name: "eval_accuracy", req: reqAtLeastOne, checks: []cond{hasEpochNum}},
			{name: "train_samples", req: reqExactlyOne, checks: []cond{valueNotEmpty}},
			{name: "eval_samples", req: reqExactlyOne, checks: []cond{valueNotEmpty}},
		},
	}

	closedCommon := &ruleFile{
		name: "closed_common",
		keys: []keyRule{
			{name: "submission_benchmark", req: reqExactlyOne, checks: []cond{valueIn(benchmarksV21)}, post: enqueueByValue("closed_%s")},
			{name: "gradient_accumulation_steps", req: reqExactlyOne, checks: []cond{{"value must be positive", func(_ *ruleState, r *Record) (bool, error) { return pyGT(r.Value, 0) }}}},
		},
	}
	openCommon := &ruleFile{
		name: "open_common",
		keys: []keyRule{
			{name: "submission_benchmark", req: reqExactlyOne, checks: []cond{valueIn(benchmarksV21)}, post: enqueueByValue("open_%s")},
		},
	}

	closedMinigoKeys := exactlyOne("train_batch_size", "lr_boundaries", "lr_rates")
	closedMinigoKeys = append(closedMinigoKeys,
		keyRule{name: "actual_selfplay_games_per_generation", req: reqAtLeastOne, checks: []cond{valueGE(8192)}},
		keyRule{name: "min_selfplay_games_per_generation", req: reqExactlyOne, checks: []cond{valueEq(8192)}},
		accuracyRule(closedMinigo),
		// These records carry no requirement; they clear what common
		// reported for these keys, so MiniGo needs no train_samples,
		// eval_samples or block records.
		keyRule{name: "block_start"},
		keyRule{name: "block_stop"},
		keyRule{name: "train_samples"},
		keyRule{name: "eval_samples"},
	)
	closedMinigoFile := &ruleFile{name: "closed_minigo", keys: closedMinigoKeys}
	openMinigo := &ruleFile{name: "open_minigo", keys: []keyRule{accuracyRule(open)}}

	dlrmTensors := []string{"embeddings", "bottom_mlp_dense1", "bottom_mlp_dense2", "bottom_mlp_dense3",
		"top_mlp_dense1", "top_mlp_dense2", "top_mlp_dense3", "top_mlp_dense4", "top_mlp_dense5"}
	closedDLRMKeys := []keyRule{{
		name:   "weights_initialization",
		req:    reqAtLeastOne,
		checks: []cond{metadataHas("tensor")},
		post: func(s *ruleState, r *Record) error {
			t, err := pySubscript(r.Metadata, "tensor")
			if err != nil {
				return err
			}
			s.initializedTensors = append(s.initializedTensors, t)
			return nil
		},
	}}
	closedDLRMKeys = append(closedDLRMKeys, exactlyOne("global_batch_size", "opt_base_learning_rate",
		"opt_learning_rate_warmup_steps", "lr_decay_start_steps", "sgd_opt_base_learning_rate")...)
	closedDLRMKeys = append(closedDLRMKeys,
		keyRule{name: "sgd_opt_learning_rate_decay_poly_power", req: reqExactlyOne, checks: []cond{valueEq(2)}},
		keyRule{name: "sgd_opt_learning_rate_decay_steps", req: reqExactlyOne},
		accuracyRule(closedDLRM),
	)
	closedDLRMFile := &ruleFile{
		name: "closed_dlrm",
		keys: closedDLRMKeys,
		end: []endCond{{
			what: fmt.Sprintf("weights_initialization must name exactly the tensors %q, each once", dlrmTensors),
			fn: func(s *ruleState) (bool, error) {
				return sameStringMultiset(s.initializedTensors, dlrmTensors)
			},
		}},
	}
	openDLRM := &ruleFile{name: "open_dlrm", keys: []keyRule{accuracyRule(open)}}

	rs := &ruleset{
		version: "2.1.0",
		files:   map[string]*ruleFile{},
		target: map[string]accuracyTarget{
			"closed/minigo": closedMinigo, "closed/dlrm": closedDLRM,
			"open/minigo": open, "open/dlrm": open,
		},
		requiredRuns: map[string]int{"minigo": 10, "dlrm": 5},
		upstreamOnly: map[string]bool{},
	}
	for _, f := range []*ruleFile{common, closedCommon, openCommon, closedMinigoFile, openMinigo, closedDLRMFile, openDLRM} {
		rs.files[f.name] = f
	}
	for _, b := range benchmarksV21 {
		for _, d := range divisions {
			if n := d + "_" + b; rs.files[n] == nil {
				rs.upstreamOnly[n] = true
			}
		}
	}
	return rs
}

// sameStringMultiset is upstream's sorted(got) == sorted(want): got must
// hold exactly the strings of want, as often. A non-string makes Python's
// comparison fail or raise, which fails the check either way.
func sameStringMultiset(got []Value, want []string) (bool, error) {
	if len(got) != len(want) {
		return false, nil
	}
	counts := map[string]int{}
	for _, w := range want {
		counts[w]++
	}
	for _, v := range got {
		if v.kind != String {
			return false, nil
		}
		counts[v.s]--
		if counts[v.s] < 0 {
			return false, nil
		}
	}
	return true, nil
}

// rulesets holds the supported rule versions by name.
var rulesets = map[string]*ruleset{"2.1.0": ruleset210}

// Rulesets returns the supported ruleset versions.
func Rulesets() []string { return []string{"2.1.0"} }

// RequiredRuns returns how many result files a benchmark needs for an
// official (olympic) score under a ruleset, or 0 when it is unknown.
func RequiredRuns(rulesetVersion, benchmark string) int {
	rs := rulesets[rulesetVersion]
	if rs == nil {
		return 0
	}
	return rs.requiredRuns[benchmark]
}
