package mllog

import (
	"strings"
	"testing"
)

// derivedCase is a log derived from a real one by editing lines, with
// the verdicts expected in the default mode (which must be upstream's
// verdict; TestUpstreamAgreement confirms it when the upstream checker is
// at hand) and in strict mode.
type derivedCase struct {
	name string
	base string // "minigo" or "dlrm": result_0.txt of that benchmark
	edit func(l *logText)

	compliant  bool   // default-mode verdict
	rule       string // a finding of this rule must be among the errors (or, when compliant, a warning if set)
	strictOK   bool   // strict-mode verdict
	strictRule string // a strict-mode error of this rule
}

// setAccuracies sets every eval_accuracy value that reaches min to v.
func (l *logText) setAccuracies(min float64, v string) {
	for _, i := range l.accuracyLines(min) {
		l.setValue(i, v)
	}
}

// accuracyLines returns the eval_accuracy lines whose value reaches min.
func (l *logText) accuracyLines(min float64) []int {
	var out []int
	for _, i := range l.find("eval_accuracy") {
		m := valueRE.FindStringSubmatch(l.lines[i])
		if m == nil {
			continue
		}
		v := Value{}
		if vv, _, err := decodeJSON([]byte(m[1]), 8); err == nil {
			v = vv
		}
		if f, ok := v.Float64(); ok && f >= min {
			out = append(out, i)
		}
	}
	return out
}

func derivedCases() []derivedCase {
	return []derivedCase{
		{name: "minigo-missing-run_stop", base: "minigo",
			edit:      func(l *logText) { l.remove(l.one("run_stop")) },
			compliant: false, rule: "common/run_stop/count", strictRule: "common/run_stop/count"},
		{name: "dlrm-missing-run_stop", base: "dlrm",
			edit:      func(l *logText) { l.remove(l.one("run_stop")) },
			compliant: false, rule: "common/run_stop/count", strictRule: "common/run_stop/count"},
		{name: "dlrm-accuracy-below-target", base: "dlrm",
			edit:      func(l *logText) { l.setAccuracies(0.8025, "0.8024") },
			compliant: false, rule: "closed_dlrm/eval_accuracy/target", strictRule: "closed_dlrm/eval_accuracy/target"},
		{name: "minigo-accuracy-below-target", base: "minigo",
			edit:      func(l *logText) { l.setAccuracies(0.5, "0.49609375") },
			compliant: false, rule: "closed_minigo/eval_accuracy/target", strictRule: "closed_minigo/eval_accuracy/target"},
		{name: "minigo-accuracy-one", base: "minigo",
			edit:      func(l *logText) { l.setAccuracies(0.5, "1.0") },
			compliant: false, rule: "closed_minigo/eval_accuracy/target", strictRule: "closed_minigo/eval_accuracy/target"},
		// Upstream only warns about an identical repeat of an exactly-once
		// key; --strict fails it.
		{name: "dlrm-duplicated-run_start", base: "dlrm",
			edit: func(l *logText) {
				i := l.one("run_start")
				l.insert(i+1, l.lines[i])
			},
			compliant: true, rule: "common/run_start/count", strictOK: false, strictRule: "strict/duplicate"},
		{name: "minigo-duplicated-run_start-later", base: "minigo",
			edit: func(l *logText) {
				i := l.one("run_start")
				l.insert(l.find("epoch_stop")[5]+1, l.lines[i])
			},
			compliant: true, rule: "common/run_start/count", strictOK: false, strictRule: "strict/duplicate"},
		{name: "dlrm-run_start-before-init_stop", base: "dlrm",
			edit:      func(l *logText) { l.move(l.one("run_start"), l.one("init_stop")) },
			compliant: false, rule: "common/run_start/check", strictRule: "common/run_start/check"},
		{name: "dlrm-two-runs-concatenated", base: "dlrm",
			edit:      func(l *logText) { l.lines = append(l.lines, l.clone().lines...) },
			compliant: false, rule: "common/init_start/check", strictRule: "common/init_start/check"},
		{name: "minigo-bad-json", base: "minigo",
			edit: func(l *logText) {
				i := l.find("epoch_stop")[3]
				l.lines[i] = strings.TrimSuffix(l.lines[i], "}")
			},
			compliant: false, rule: "parse/syntax", strictRule: "parse/syntax"},
		{name: "dlrm-bad-json-trailing-garbage", base: "dlrm",
			edit:      func(l *logText) { i := l.one("init_stop"); l.lines[i] += " x" },
			compliant: false, rule: "parse/syntax", strictRule: "parse/syntax"},
		{name: "dlrm-record-without-metadata", base: "dlrm",
			edit: func(l *logText) {
				i := l.find("eval_start")[2]
				l.lines[i] = l.lines[i][:strings.Index(l.lines[i], `, "metadata"`)] + "}"
			},
			compliant: false, rule: "parse/shape", strictRule: "checker/crash"},
		{name: "dlrm-time_ms-not-a-number", base: "dlrm",
			edit:      func(l *logText) { l.replace(l.one("cache_clear"), `"time_ms": 1652563493034`, `"time_ms": "soon"`) },
			compliant: false, rule: "parse/time", strictRule: "parse/time"},
		// Python's float() takes a numeric string; upstream accepts it.
		{name: "dlrm-time_ms-numeric-string", base: "dlrm",
			edit: func(l *logText) {
				l.replace(l.one("cache_clear"), `"time_ms": 1652563493034`, `"time_ms": " 1_652_563_493_034 "`)
			},
			compliant: true, strictOK: false, strictRule: "strict/format"},
		{name: "minigo-run_stop-without-status", base: "minigo",
			edit:      func(l *logText) { l.replace(l.one("run_stop"), `, "status": "success"`, "") },
			compliant: false, rule: "common/run_stop/check", strictRule: "strict/run_stop_status"},
		{name: "dlrm-run_stop-aborted", base: "dlrm",
			edit:      func(l *logText) { l.replace(l.one("run_stop"), `"status": "success"`, `"status": "aborted"`) },
			compliant: true, strictOK: false, strictRule: "strict/run_stop_status"},
		// MiniGo evaluates after training; run_stop closes the log. Logged
		// before the evaluations, no passing accuracy precedes it.
		{name: "minigo-run_stop-before-evaluations", base: "minigo",
			edit:      func(l *logText) { l.move(l.one("run_stop"), l.find("eval_start")[0]) },
			compliant: true, strictOK: false, strictRule: "strict/accuracy_order"},
		// Back-dated further than the winning generation allows.
		{name: "minigo-run_stop-backdated-too-far", base: "minigo",
			edit: func(l *logText) {
				l.setTime(l.one("run_stop"), l.timeMS(l.one("run_start"))+60_000)
			},
			compliant: true, strictOK: false, strictRule: "strict/minigo_generation"},
		// Dated before run_start: upstream's checker does not compare the
		// times (compliant), its summarizer would score a negative time;
		// repro warns and does not time the run.
		{name: "dlrm-run_stop-dated-before-run_start", base: "dlrm",
			edit: func(l *logText) {
				l.setTime(l.one("run_stop"), l.timeMS(l.one("run_start"))-60_000)
			},
			compliant: true, rule: "time/negative", strictOK: false, strictRule: "strict/run_stop_time"},
		{name: "dlrm-run_stop-dated-before-passing-eval", base: "dlrm",
			edit: func(l *logText) {
				i := l.one("run_stop")
				l.setTime(i, l.timeMS(i)-10_000)
			},
			compliant: true, strictOK: false, strictRule: "strict/run_stop_time"},
		{name: "dlrm-run_stop-before-passing-eval", base: "dlrm",
			edit: func(l *logText) {
				acc := l.accuracyLines(0.8025)
				l.move(l.one("run_stop"), acc[0])
			},
			compliant: true, strictOK: false, strictRule: "strict/accuracy_order"},
		{name: "minigo-min-selfplay-games-4096", base: "minigo",
			edit:      func(l *logText) { l.setValue(l.one("min_selfplay_games_per_generation"), "4096") },
			compliant: false, rule: "closed_minigo/min_selfplay_games_per_generation/check", strictRule: "closed_minigo/min_selfplay_games_per_generation/check"},
		{name: "minigo-too-few-selfplay-games", base: "minigo",
			edit:      func(l *logText) { l.setValue(l.find("actual_selfplay_games_per_generation")[7], "8191") },
			compliant: false, rule: "closed_minigo/actual_selfplay_games_per_generation/check", strictRule: "closed_minigo/actual_selfplay_games_per_generation/check"},
		{name: "minigo-missing-gradient_accumulation_steps", base: "minigo",
			edit:      func(l *logText) { l.remove(l.one("gradient_accumulation_steps")) },
			compliant: false, rule: "closed_common/gradient_accumulation_steps/count", strictRule: "closed_common/gradient_accumulation_steps/count"},
		{name: "dlrm-poly-power-1", base: "dlrm",
			edit:      func(l *logText) { l.setValue(l.one("sgd_opt_learning_rate_decay_poly_power"), "1.0") },
			compliant: false, rule: "closed_dlrm/sgd_opt_learning_rate_decay_poly_power/check", strictRule: "closed_dlrm/sgd_opt_learning_rate_decay_poly_power/check"},
		{name: "dlrm-missing-tensor-init", base: "dlrm",
			edit: func(l *logText) {
				for _, i := range l.find("weights_initialization") {
					if strings.Contains(l.lines[i], "top_mlp_dense5") {
						l.remove(i)
						return
					}
				}
			},
			compliant: false, rule: "closed_dlrm/end", strictRule: "closed_dlrm/end"},
		{name: "dlrm-missing-train_samples", base: "dlrm",
			edit:      func(l *logText) { l.remove(l.one("train_samples")) },
			compliant: false, rule: "common/train_samples/count", strictRule: "common/train_samples/count"},
		{name: "dlrm-init-too-long", base: "dlrm",
			edit: func(l *logText) {
				start := l.timeMS(l.one("init_start"))
				l.setTime(l.one("init_stop"), start+31*60_000)
			},
			compliant: false, rule: "common/init_stop/check", strictRule: "common/init_stop/check"},
		{name: "minigo-submission_division-late", base: "minigo",
			edit:      func(l *logText) { l.move(l.one("submission_division"), l.one("init_stop")+1) },
			compliant: false, rule: "common/init_stop/check", strictRule: "common/init_stop/check"},
		{name: "minigo-launcher-prefixes", base: "minigo",
			edit: func(l *logText) {
				for i := range l.lines {
					l.lines[i] = "0: [1,0]<stdout>:" + l.lines[i]
				}
				l.insert(0, "+ srun --mpi=pmix ./run_and_time.sh")
			},
			compliant: true, strictOK: true},
		{name: "dlrm-crlf-line-ends", base: "dlrm",
			edit: func(l *logText) {
				for i := range l.lines {
					l.lines[i] += "\r"
				}
			},
			compliant: true, strictOK: true},
		{name: "dlrm-open-division-below-closed-target", base: "dlrm",
			edit: func(l *logText) {
				l.setValue(l.one("submission_division"), `"open"`)
				l.setAccuracies(0.8025, "0.79")
			},
			compliant: true, strictOK: true},
		// The open MiniGo rules do not lift common's train_samples and
		// eval_samples requirements, as the closed ones do.
		{name: "minigo-open-division", base: "minigo",
			edit:      func(l *logText) { l.setValue(l.one("submission_division"), `"open"`) },
			compliant: false, rule: "common/train_samples/count", strictRule: "common/eval_samples/count"},
		{name: "minigo-nan-in-unchecked-value", base: "minigo",
			edit:      func(l *logText) { l.setValue(l.find("throughput")[0], "NaN") },
			compliant: true, strictOK: false, strictRule: "strict/format"},
		{name: "dlrm-accuracy-as-string", base: "dlrm",
			edit: func(l *logText) {
				i := l.accuracyLines(0.8025)[0]
				l.setValue(i, `"0.802702"`)
			},
			compliant: false, rule: "checker/crash", strictRule: "checker/crash"},
		{name: "dlrm-benchmark-bert", base: "dlrm",
			edit:      func(l *logText) { l.setValue(l.one("submission_benchmark"), `"bert"`) },
			compliant: false, rule: "ruleset/unimplemented", strictRule: "ruleset/unimplemented"},
		{name: "dlrm-division-unknown", base: "dlrm",
			edit:      func(l *logText) { l.setValue(l.one("submission_division"), `"closed "`) },
			compliant: false, rule: "common/submission_division/check", strictRule: "checker/crash"},
		{name: "dlrm-eval_accuracy-without-epoch_num", base: "dlrm",
			edit: func(l *logText) {
				i := l.find("eval_accuracy")[3]
				l.lines[i] = strings.Replace(l.lines[i], `"epoch_num"`, `"epoch"`, 1)
			},
			compliant: false, rule: "closed_dlrm/eval_accuracy/check", strictRule: "closed_dlrm/eval_accuracy/check"},
		{name: "dlrm-big-integer-value", base: "dlrm",
			edit:      func(l *logText) { l.setValue(l.one("train_samples"), "123456789012345678901234567890123456789") },
			compliant: true, strictOK: true},
		{name: "dlrm-marker-twice", base: "dlrm",
			edit: func(l *logText) {
				i := l.one("cache_clear")
				l.lines[i] = ":::MLLOG garbage " + l.lines[i]
			},
			compliant: true, strictOK: false, strictRule: "strict/format"},
		{name: "empty-log", base: "dlrm",
			edit:      func(l *logText) { l.lines = []string{"no records here"} },
			compliant: false, rule: "common/no_records", strictRule: "common/no_records"},
	}
}

// derive applies the case's edit to its base log.
func (c derivedCase) derive(t testing.TB, minigo, dlrm string) string {
	t.Helper()
	base := dlrm
	if c.base == "minigo" {
		base = minigo
	}
	l := readLogText(t, base)
	c.edit(l)
	return l.String()
}
