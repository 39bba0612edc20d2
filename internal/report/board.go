package report

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/reproduce"
	"github.com/reprolab/repro/internal/runs"
)

// BoardSchema names the JSON form of a Board.
const BoardSchema = "repro.board/v1"

// Board is the leaderboard of one dataset: one row per signer and label
// (the trusted key that signed the run and the run's label, see
// internal/runlabel), its newest verified run, or every run with All.
// Every row comes from a report (Build), so every number on it was read
// from a run folder checked against its signed record, and its scores are
// computed from the verdicts of its results file (never taken from the
// record's summary). A row ranks only when NotRankedReasons finds nothing
// against it: it verifies and matches the board's reference profile
// (codebench.Reference). Runs of the canonical solutions are references,
// listed apart in References and never ranked.
type Board struct {
	Schema  string `json:"schema"`
	Dataset string `json:"dataset"`
	// All: every run of the dataset, not the newest verified per label.
	All bool `json:"all"`
	// Sort is the key the rows are in (see SortKeys), Desc its order.
	Sort string     `json:"sort"`
	Desc bool       `json:"desc"`
	Rows []BoardRow `json:"rows"`
	// References are the runs of the dataset's canonical solutions: shown
	// apart from the models, never ranked.
	References []BoardRow `json:"references"`
	// Profile is the reference profile a row must match to rank.
	Profile BoardProfile `json:"profile"`
	// PassK lists the k > 1 of pass@k some row has ("pass@10", ...).
	PassK []string `json:"pass_k"`
	// RankedBy is the score the ranks follow ("plus" or "base", with
	// "@k" past pass@1).
	RankedBy string `json:"ranked_by"`
	// RequireReexecution: the maintainer's policy (REPRO_HOME/trust.json,
	// "leaderboard": {"require_reexecution": true}) ranks a run not signed
	// with the local run key (a submission) only when its newest
	// re-execution here agrees (internal/reproduce).
	RequireReexecution bool `json:"require_reexecution,omitempty"`
	// Notes say what the board left out and why.
	Notes  []string `json:"notes,omitempty"`
	Matrix *Chart   `json:"-"`
}

// BoardProfile is the reference profile of a board as its JSON and page
// state it (see codebench.Reference).
type BoardProfile struct {
	Dataset    string       `json:"dataset"`
	Assets     []runs.Asset `json:"assets"`
	DatasetMD5 string       `json:"dataset_md5,omitempty"`
	Tasks      int          `json:"tasks"`
	Engine     string       `json:"engine"`
	Images     []string     `json:"images"`
	Harness    string       `json:"harness_digest"`
	// Missing says why the profile is incomplete; while it is not empty,
	// no row ranks.
	Missing []string `json:"missing,omitempty"`
}

// BoardRow is one run on the board.
type BoardRow struct {
	// Rank is the row's place by the RankedBy score among the ranked
	// rows; 0 for a row that is not ranked, with the reasons in
	// NotRankedReasons (NotRanked joins them).
	Rank             int      `json:"rank,omitempty"`
	NotRanked        string   `json:"not_ranked,omitempty"`
	NotRankedReasons []string `json:"not_ranked_reasons,omitempty"`
	Label            string   `json:"label"`
	Model            string   `json:"model,omitempty"`
	Sampling         string   `json:"sampling,omitempty"`
	RunID            string   `json:"run_id"`
	Status           string   `json:"status"`
	Verified         bool     `json:"verified"`
	// Problem is the first reason the run does not verify.
	Problem string `json:"problem,omitempty"`
	// Problems counts the reasons.
	Problems int `json:"problems,omitempty"`
	// Signer is the name of the trusted key that signed the record,
	// SignerKeyID its key id.
	Signer      string `json:"signer,omitempty"`
	SignerKeyID string `json:"signer_key_id,omitempty"`
	// Engine is the scoring engine the record names.
	Engine string `json:"engine"`
	// Canonical: the run scored the canonical solutions (a reference).
	Canonical bool `json:"canonical"`
	// Base and Plus are pass@k computed from the verdicts of the run's
	// results file (nil without one).
	Base       map[string]float64 `json:"base_pass_at_k"`
	Plus       map[string]float64 `json:"plus_pass_at_k,omitempty"`
	PlusScored bool               `json:"plus_scored"`
	Tasks      int                `json:"tasks"`
	Subset     bool               `json:"subset"`
	// MinSamples and MaxSamples are the fewest and most samples a task
	// had.
	MinSamples    int       `json:"min_samples_per_task"`
	MaxSamples    int       `json:"max_samples_per_task"`
	ImageID       string    `json:"image_id,omitempty"`
	HarnessDigest string    `json:"harness_digest,omitempty"`
	Finished      time.Time `json:"finished_at"`
	// Others counts the label's runs the board does not show (without
	// All).
	Others int `json:"other_runs,omitempty"`
	// Reexecution is the newest re-execution of the run on this machine
	// (repro runs reproduce, signed with the local run key), nil if none.
	Reexecution *reproduce.Reproduction `json:"reexecution,omitempty"`
	// Local: the run is signed with this REPRO_HOME's own run key (it
	// ran here); every other run is a submission.
	Local bool `json:"local,omitempty"`

	rows []TaskRow
	rep  *Report
	// profile are the reasons NotRankedReasons gave when the run was read.
	profile []string
}

// EngineText names the row's scoring engine for a table cell.
func (r BoardRow) EngineText() string {
	if r.Engine == "" {
		return "engine not recorded"
	}
	return "engine " + r.Engine
}

// ShortProblem is the start of Problem, for a table cell (the whole of it
// goes on hover).
func (r BoardRow) ShortProblem() string {
	s := truncate(r.Problem, 48)
	if r.Problems > 1 {
		s += fmt.Sprintf(" (and %d more)", r.Problems-1)
	}
	return s
}

// SamplingText writes Sampling with a space after each comma, so that a
// table cell can wrap it.
func (r BoardRow) SamplingText() string { return strings.ReplaceAll(r.Sampling, ",", ", ") }

// SamplesPerTask writes the samples per task: "5", or "1–5" when tasks
// had different numbers.
func (r BoardRow) SamplesPerTask() string {
	if r.MinSamples == r.MaxSamples {
		return fmt.Sprint(r.MaxSamples)
	}
	return fmt.Sprintf("%d–%d", r.MinSamples, r.MaxSamples)
}

// Cell writes the row's pass@k ("pass@1", ...) of phase ("base" or
// "plus") as a percentage, "–" where it has none.
func (r BoardRow) Cell(phase, passK string) string {
	v, ok := r.Score(phase + "@" + strings.TrimPrefix(passK, "pass@"))
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

// Score returns the row's value for a score key ("plus", "base",
// "plus@10", ...) and whether it has one.
func (r BoardRow) Score(key string) (float64, bool) {
	phase, k, _ := strings.Cut(key, "@")
	if k == "" {
		k = "1"
	}
	m := r.Base
	if phase == "plus" {
		if !r.PlusScored {
			return 0, false
		}
		m = r.Plus
	}
	v, ok := m["pass@"+k]
	return v, ok
}

// SortKeys are the keys a board sorts by besides the scores: "label",
// "model", "samples" and "date". Scores are "plus" and "base" (pass@1)
// and "plus@K", "base@K" for the PassK of the board.
var SortKeys = []string{"label", "model", "samples", "date"}

// BoardOptions choose the rows and their order.
type BoardOptions struct {
	All bool
	// Sort is a key (SortKeys or a score key); "" sorts by rank.
	Sort string
	// Order is "asc", "desc" or "" for the key's natural order (scores,
	// samples and dates descending, names ascending).
	Order string
}

// BuildBoard builds the board of dataset (matched without regard to
// case) from the runs ids of home: each HumanEval run of that dataset is
// read through Build, so it is verified first. Runs of other kinds or
// datasets are passed over; a run that cannot be read is left out with a
// note. An unknown sort key or order is a usage error.
func BuildBoard(home, dataset string, ids []string, o BoardOptions) (*Board, error) {
	return CollectBoard(home, dataset, ids).Board(o)
}

// BoardRuns are the runs of one dataset's board, read and verified once,
// from which boards in any view and order are made.
type BoardRuns struct {
	dataset string
	// byLabel holds the runs of each signer and label (rowKey).
	byLabel map[string][]BoardRow
	passK   []string
	notes   []string
	profile BoardProfile

	// requireReexecution is the trust file's leaderboard policy.
	requireReexecution bool
}

// CollectBoard reads the runs of dataset among ids of home (see
// BuildBoard), against the reference profile of home
// (codebench.LoadReference).
func CollectBoard(home, dataset string, ids []string) *BoardRuns {
	return CollectBoardWith(home, dataset, ids, codebench.LoadReference(home, dataset))
}

// rowKey is the key of a row's signer and label: a label belongs to the
// key that signed it, so that no signer's run can take another's row.
func rowKey(r BoardRow) string { return r.SignerKeyID + "\x00" + r.Label }

// CollectBoardWith is CollectBoard against the reference profile ref.
func CollectBoardWith(home, dataset string, ids []string, ref *codebench.Reference) *BoardRuns {
	br, _ := CollectBoardContext(context.Background(), home, dataset, ids, ref)
	return br
}

// CollectBoardContext is CollectBoardWith, stopping the check of the runs'
// files within a read of at most 1 MiB once ctx is done: then it returns
// no runs and runs.Interrupted's error (exit 1).
func CollectBoardContext(ctx context.Context, home, dataset string, ids []string, ref *codebench.Reference) (*BoardRuns, error) {
	var of []string
	for _, id := range ids {
		if isRunOf(home, id, dataset) {
			of = append(of, id)
		}
	}
	return CollectBoardOf(ctx, home, dataset, of, ref)
}

// CollectBoardOf is CollectBoardContext for ids that the caller already
// knows to be the HumanEval runs of dataset without reading their records
// (from the run index): each record is read once, by the run's
// verification (Build), which checks its kind and dataset again, so that a
// run that is not of the board is still passed over.
func CollectBoardOf(ctx context.Context, home, dataset string, ids []string, ref *codebench.Reference) (*BoardRuns, error) {
	br := &BoardRuns{dataset: dataset, byLabel: map[string][]BoardRow{}, passK: []string{}, profile: profileOf(ref)}
	if tf, err := runs.LoadTrust(home, ""); err == nil {
		br.requireReexecution = tf.Leaderboard.RequireReexecution
	}
	localKey := reproduce.LocalKeyID(home)
	ks := map[string]bool{}
	for _, id := range ids {
		rep, err := BuildContext(ctx, home, id)
		if ctx.Err() != nil {
			return nil, runs.Interrupted(ctx, "the runs of the board of "+dataset)
		}
		if err != nil {
			br.notes = append(br.notes, fmt.Sprintf("run %s cannot be read: %v", id, err))
			continue
		}
		if rep.HumanEval == nil || !strings.EqualFold(rep.HumanEval.Dataset, dataset) {
			continue
		}
		if len(br.byLabel) == 0 {
			br.dataset = rep.HumanEval.Dataset // as the runs name it
		}
		row := boardRow(id, rep)
		row.profile = NotRankedReasons(ref, rep)
		row.Local = rep.Signer != nil && localKey != "" && rep.Signer.KeyID == localKey
		if ref != nil && len(ref.Tasks) > 0 && rep.HumanEval.Verdicts != nil {
			row.Subset = row.Tasks < len(ref.Tasks) // what the verdicts cover, not what the record claims
		}
		if re, err := reproduce.LatestOf(home, id, rep.recordSHA256); err == nil {
			row.Reexecution = re
		}
		for k := range row.Base {
			if k != "pass@1" {
				ks[k] = true
			}
		}
		br.byLabel[rowKey(row)] = append(br.byLabel[rowKey(row)], row)
	}
	for k := range ks {
		br.passK = append(br.passK, k)
	}
	sort.Slice(br.passK, func(i, j int) bool {
		a, b := br.passK[i], br.passK[j]
		return len(a) < len(b) || len(a) == len(b) && a < b
	})
	for _, rows := range br.byLabel {
		sort.Slice(rows, func(i, j int) bool { return newer(rows[i], rows[j]) })
	}
	return br, nil
}

// Board makes the board in o's view and order. Without o.All each label
// shows its newest run that verifies, ended ok and has a score; else its
// newest verified run, else its newest run.
func (br *BoardRuns) Board(o BoardOptions) (*Board, error) {
	b := &Board{Schema: BoardSchema, Dataset: br.dataset, All: o.All, Rows: []BoardRow{}, References: []BoardRow{}, PassK: br.passK, Notes: br.notes, Profile: br.profile}
	b.RequireReexecution = br.requireReexecution
	labels := make([]string, 0, len(br.byLabel))
	for l := range br.byLabel {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for _, l := range labels {
		rows := br.byLabel[l]
		if o.All {
			b.Rows = append(b.Rows, rows...)
			continue
		}
		pick := -1
		for i, r := range rows {
			if r.Verified && r.Status == "ok" && r.Base != nil {
				pick = i
				break
			}
		}
		for i, r := range rows {
			if pick < 0 && r.Verified {
				pick = i
			}
		}
		shown := rows[max(pick, 0)]
		shown.Others = len(rows) - 1
		b.Rows = append(b.Rows, shown)
	}
	if err := b.order(o); err != nil {
		return nil, err
	}
	models := b.Rows[:0:0]
	for _, r := range b.Rows {
		if r.Canonical {
			b.References = append(b.References, r)
		} else {
			models = append(models, r)
		}
	}
	b.Rows = models
	b.Matrix = matrix(append(append([]BoardRow{}, b.Rows...), b.References...))
	return b, nil
}

// Report is the report a row was made from.
func (r BoardRow) Report() *Report { return r.rep }

// isRunOf reads run id's record (without verifying it: Build does) and
// reports whether it is a HumanEval run of dataset, so that other runs
// are not verified for nothing.
func isRunOf(home, id, dataset string) bool {
	r, err := runs.Open(home, id)
	if err != nil || r.ID != id {
		return false
	}
	rec, _, err := r.ReadRecord()
	return err == nil && rec.Kind == "humaneval" && strings.EqualFold(DatasetOf(rec), dataset)
}

// DatasetOf names what a run ran on: the record's dataset (humaneval), its
// benchmark (mllog, handoff), else its catalog assets.
func DatasetOf(rec *runs.Record) string { return rec.Dataset() }

func newer(a, b BoardRow) bool {
	if !a.Finished.Equal(b.Finished) {
		return a.Finished.After(b.Finished)
	}
	return a.RunID > b.RunID
}

// boardRow is the row of run id (its folder's name, a run id by form,
// which the record's own id need not be) from its report.
func boardRow(id string, rep *Report) BoardRow {
	he := rep.HumanEval
	row := BoardRow{
		RunID: id, Status: rep.Run.Status, Verified: rep.Verified, Engine: he.Engine, Canonical: he.Canonical, Subset: he.Subset,
		ImageID: rep.Provenance.ImageID, HarnessDigest: rep.Provenance.HarnessDigest, Finished: rep.Run.FinishedAt,
		rows: he.Rows, rep: rep,
	}
	if v := he.Verdicts; v != nil {
		row.Base, row.Plus, row.PlusScored, row.Tasks = v.BasePassAtK, v.PlusPassAtK, v.PlusScored, v.Tasks
	}
	if s := rep.Subject; s != nil {
		row.Label, row.Model, row.Sampling = s.Label, s.Model, s.Sampling.String()
	}
	if row.Label == "" {
		row.Label = rep.Run.ID
	}
	if len(row.Base) == 0 {
		row.Base = nil
	}
	if rep.Signer != nil {
		row.Signer, row.SignerKeyID = rep.Signer.Name, rep.Signer.KeyID
	}
	if len(rep.Problems) > 0 {
		p := rep.Problems[0]
		row.Problem, row.Problems = strings.TrimPrefix(p.Path+": "+p.What, ": "), len(rep.Problems)
	}
	for i, r := range he.Rows {
		if i == 0 || r.Samples < row.MinSamples {
			row.MinSamples = r.Samples
		}
		row.MaxSamples = max(row.MaxSamples, r.Samples)
	}
	return row
}

// scoreKey reports whether key names a score and which.
func (b *Board) scoreKey(key string) bool {
	phase, k, _ := strings.Cut(key, "@")
	if phase != "plus" && phase != "base" {
		return false
	}
	return k == "" || k != "1" && contains(b.PassK, "pass@"+k)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// order ranks the rows and sorts them as o asks.
func (b *Board) order(o BoardOptions) error {
	b.RankedBy = "plus"
	if !b.anyScore("plus") {
		b.RankedBy = "base"
	}
	key := o.Sort
	if key == "" || key == "rank" {
		key = b.RankedBy
	}
	if !b.scoreKey(key) && !contains(SortKeys, key) {
		return exitcode.Errorf(exitcode.Usage, "unknown sort key %q (one of plus, base, %s%s)", key, strings.Join(SortKeys, ", "), b.kKeys())
	}
	if b.scoreKey(key) {
		b.RankedBy = key
	}
	switch o.Order {
	case "":
		b.Desc = b.scoreKey(key) || key == "samples" || key == "date"
	case "asc", "desc":
		b.Desc = o.Order == "desc"
	default:
		return exitcode.Errorf(exitcode.Usage, "unknown sort order %q (asc or desc)", o.Order)
	}
	b.Sort = key
	// Rank: the rows NotRankedReasons finds nothing against that have
	// the score; best first, ties share a rank.
	var ranked []int
	for i := range b.Rows {
		r := &b.Rows[i]
		r.NotRankedReasons = append([]string(nil), r.profile...)
		if b.RequireReexecution && !r.Local {
			switch {
			case r.Reexecution == nil:
				r.NotRankedReasons = append(r.NotRankedReasons, "not re-executed here (repro runs reproduce)")
			case !r.Reexecution.Agrees:
				r.NotRankedReasons = append(r.NotRankedReasons, fmt.Sprintf("its re-execution here differs (%d of %d verdicts agree)", r.Reexecution.Agree, r.Reexecution.Verdicts))
			}
		}
		if _, has := r.Score(b.RankedBy); !has {
			r.NotRankedReasons = append(r.NotRankedReasons, "no "+b.RankedBy+" score")
		}
		if len(r.NotRankedReasons) == 0 {
			ranked = append(ranked, i)
			continue
		}
		r.NotRanked = strings.Join(r.NotRankedReasons, "; ")
	}
	sort.SliceStable(ranked, func(x, y int) bool {
		vx, _ := b.Rows[ranked[x]].Score(b.RankedBy)
		vy, _ := b.Rows[ranked[y]].Score(b.RankedBy)
		return vx > vy
	})
	for n, i := range ranked {
		b.Rows[i].Rank = n + 1
		if n > 0 {
			prev := b.Rows[ranked[n-1]]
			vp, _ := prev.Score(b.RankedBy)
			if v, _ := b.Rows[i].Score(b.RankedBy); v == vp {
				b.Rows[i].Rank = prev.Rank
			}
		}
	}
	less := func(x, y BoardRow) (bool, bool) { // less, decided
		switch key {
		case "label":
			return x.Label < y.Label, x.Label != y.Label
		case "model":
			return x.Model < y.Model, x.Model != y.Model
		case "samples":
			return x.MaxSamples < y.MaxSamples, x.MaxSamples != y.MaxSamples
		case "date":
			return x.Finished.Before(y.Finished), !x.Finished.Equal(y.Finished)
		}
		vx, okx := x.Score(key)
		vy, oky := y.Score(key)
		if okx != oky {
			return !okx, true // a row without the score sorts below every score
		}
		return vx < vy, vx != vy
	}
	sort.SliceStable(b.Rows, func(i, j int) bool {
		x, y := b.Rows[i], b.Rows[j]
		if gx, gy := group(x), group(y); b.scoreKey(key) && gx != gy {
			return gx < gy // by a score: ranked rows, then verified ones, then the rest
		}
		l, decided := less(x, y)
		if !decided {
			return newer(x, y)
		}
		if b.Desc {
			l, _ = less(y, x)
		}
		return l
	})
	return nil
}

// group is where a row goes when the board is sorted by a score: 0
// ranked, 1 verified but not ranked, 2 not verified.
func group(r BoardRow) int {
	switch {
	case r.Rank > 0:
		return 0
	case r.Verified:
		return 1
	}
	return 2
}

func (b *Board) anyScore(key string) bool {
	for _, r := range b.Rows {
		if _, ok := r.Score(key); ok {
			return true
		}
	}
	return false
}

func (b *Board) kKeys() string {
	var out []string
	for _, k := range b.PassK {
		n := strings.TrimPrefix(k, "pass@")
		out = append(out, "plus@"+n, "base@"+n)
	}
	if len(out) == 0 {
		return ""
	}
	return ", " + strings.Join(out, ", ")
}

// Datasets are the datasets of the HumanEval runs among ids of home, with
// the number of runs of each, by name.
func Datasets(home string, ids []string) []DatasetRuns {
	n := map[string]int{}
	for _, id := range ids {
		r, err := runs.Open(home, id)
		if err != nil || r.ID != id {
			continue
		}
		if rec, _, err := r.ReadRecord(); err == nil && rec.Kind == "humaneval" {
			if d := DatasetOf(rec); d != "" {
				n[d]++
			}
		}
	}
	out := make([]DatasetRuns, 0, len(n))
	for d, c := range n {
		out = append(out, DatasetRuns{Dataset: d, Runs: c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dataset < out[j].Dataset })
	return out
}

// DatasetRuns counts the runs of a dataset.
type DatasetRuns struct {
	Dataset string `json:"dataset"`
	Runs    int    `json:"runs"`
}

const (
	matrixCell   = 12 // pixels per task, with the gap
	matrixRowH   = 22
	matrixBlock  = 50 // tasks per block of columns
	matrixLeft   = 180
	maxMatrixRow = 40
)

// matrix draws which tasks each verified row solves: one row per run,
// one column per task (in blocks of matrixBlock), each cell's upper half
// the base tests, its lower half base and plus.
func matrix(rows []BoardRow) *Chart {
	var shown []BoardRow
	for _, r := range rows {
		if r.Verified && len(r.rows) > 0 && len(shown) < maxMatrixRow {
			shown = append(shown, r)
		}
	}
	if len(shown) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var tasks []string
	for _, r := range shown {
		for _, t := range r.rows {
			if !seen[t.Task] {
				seen[t.Task] = true
				tasks = append(tasks, t.Task)
			}
		}
	}
	sort.Slice(tasks, func(i, j int) bool { return taskLess(tasks[i], tasks[j]) })
	col := map[string]int{}
	for i, t := range tasks {
		col[t] = i
	}
	blocks := (len(tasks) + matrixBlock - 1) / matrixBlock
	blockH := 18 + len(shown)*matrixRowH + 12
	c := &Chart{Title: "Tasks solved, per run", Width: matrixLeft + min(len(tasks), matrixBlock)*matrixCell + plotRight, Height: blocks * blockH,
		Caption: "one row per run shown above (verified runs only), one column per task in task order; the upper half of a cell is the base tests, the lower half base and plus; hover a cell for the task and the samples that passed"}
	statusOf := func(passed, samples int) string {
		switch {
		case samples > 0 && passed == samples:
			return "pass"
		case passed > 0:
			return "partial"
		}
		return "fail"
	}
	// A label that two signers' rows share is told apart by its signer.
	signers := map[string]map[string]bool{}
	for _, r := range shown {
		if signers[r.Label] == nil {
			signers[r.Label] = map[string]bool{}
		}
		signers[r.Label][r.Signer] = true
	}
	rowName := func(r BoardRow) string {
		if len(signers[r.Label]) > 1 && r.Signer != "" {
			return truncate(r.Label, 16) + " (" + truncate(r.Signer, 8) + ")"
		}
		return truncate(r.Label, 26)
	}
	for blk := 0; blk < blocks; blk++ {
		y0 := blk * blockH
		for i := blk * matrixBlock; i < min(len(tasks), (blk+1)*matrixBlock); i += 10 {
			c.Texts = append(c.Texts, Text{X: matrixLeft + (i%matrixBlock)*matrixCell + matrixCell/2, Y: y0 + 12, Anchor: "middle", Class: "tick", Text: taskNumber(tasks[i])})
		}
		if blk == 0 {
			c.Texts = append(c.Texts, Text{X: matrixLeft - 6, Y: y0 + 12, Anchor: "end", Class: "axis-title", Text: "task →"})
		}
		for ri, r := range shown {
			y := y0 + 18 + ri*matrixRowH
			c.Texts = append(c.Texts, Text{X: matrixLeft - 6, Y: y + 14, Anchor: "end", Class: "tick", Text: rowName(r)})
			have := map[string]TaskRow{}
			for _, t := range r.rows {
				have[t.Task] = t
			}
			for i := blk * matrixBlock; i < min(len(tasks), (blk+1)*matrixBlock); i++ {
				x := matrixLeft + (i%matrixBlock)*matrixCell
				t, ok := have[tasks[i]]
				if !ok {
					c.Rects = append(c.Rects, Rect{X: x, Y: y, W: matrixCell - 1, H: matrixRowH - 2, Class: "none", Title: fmt.Sprintf("%s · %s: not scored", tasks[i], r.Label)})
					continue
				}
				half := (matrixRowH - 2) / 2
				base := statusOf(t.BasePassed, t.Samples)
				plus, plusText := statusOf(t.Passed, t.Samples), fmt.Sprintf("base and plus %d/%d", t.Passed, t.Samples)
				if !r.PlusScored {
					plus, plusText = "none", "plus not scored"
				}
				title := fmt.Sprintf("%s · %s: base %d/%d, %s", t.Task, r.Label, t.BasePassed, t.Samples, plusText)
				c.Rects = append(c.Rects, Rect{X: x, Y: y, W: matrixCell - 1, H: half - 1, Class: base, Title: title},
					Rect{X: x, Y: y + half, W: matrixCell - 1, H: half, Class: plus, Title: title})
			}
		}
	}
	c.Legend = []LegendItem{{Class: "pass", Label: "every sample passed"}, {Class: "partial", Label: "some passed"}, {Class: "fail", Label: "none passed"}, {Class: "none", Label: "not scored"}}
	return c
}

// BoardLinks are the addresses a board page links to: the dashboard's
// routes, or the files of a static export.
type BoardLinks interface {
	// Board is the board in view all sorted by key in order ("asc" or
	// "desc").
	Board(all bool, key, order string) string
	// Run is the page of run id.
	Run(id string) string
	// Compare is the comparison of runs a and b; "" where there is none.
	Compare(a, b string) string
	// Home is the page above the board; "" for none.
	Home() string
	// MatrixElsewhere is where the per-task matrix is when this page does
	// not draw it; "" to draw it here.
	MatrixElsewhere(b *Board) string
}

// boardHeader is one column heading of the board's table.
type boardHeader struct {
	Title, Href, Arrow, Hint string
}

// boardRowView is one row of a board's table with its page.
type boardRowView struct {
	Page boardPage
	Row  BoardRow
}

type boardPage struct {
	*Board
	Links    BoardLinks
	Headers  []boardHeader
	Leader   string // the run id of rank 1, for the compare links
	Matrix   *Chart
	Elsewere string
}

// WriteBoard renders b as an HTML page (no script, no external assets)
// whose links come from links.
func WriteBoard(w io.Writer, b *Board, links BoardLinks) error {
	p := boardPage{Board: b, Links: links, Elsewere: links.MatrixElsewhere(b)}
	if p.Elsewere == "" {
		p.Matrix = b.Matrix
	}
	head := func(title, key, hint string) {
		h := boardHeader{Title: title, Hint: hint}
		if key != "" {
			order := ""
			if key == b.Sort {
				h.Arrow = map[bool]string{true: " ▼", false: " ▲"}[b.Desc]
				order = map[bool]string{true: "asc", false: "desc"}[b.Desc]
			} else {
				order = map[bool]string{true: "desc", false: "asc"}[b.scoreKey(key) || key == "samples" || key == "date"]
			}
			h.Href = links.Board(b.All, key, order)
			h.Hint = "sort by " + title
		}
		p.Headers = append(p.Headers, h)
	}
	head("rank", "", "by "+b.RankedBy+" pass@"+kOf(b.RankedBy)+", verified full runs only")
	head("label", "label", "")
	head("model", "model", "")
	head("base pass@1", "base", "")
	head("plus pass@1", "plus", "")
	for _, k := range b.PassK {
		n := strings.TrimPrefix(k, "pass@")
		head("base "+k, "base@"+n, "")
		head("plus "+k, "plus@"+n, "")
	}
	head("samples / task", "samples", "")
	head("evidence", "", "checked against the signed record just now, and the trusted key that signed it")
	head("engine · image · harness", "", "the scoring engine, and the digests of the evaluator image and of the harness that scored the run")
	head("date", "date", "")
	for _, r := range b.Rows {
		if r.Rank == 1 && p.Leader == "" {
			p.Leader = r.RunID
		}
	}
	if err := boardTmpl.Execute(w, p); err != nil {
		return fmt.Errorf("failed to render the board: %w", err)
	}
	return nil
}

func kOf(key string) string {
	if _, k, ok := strings.Cut(key, "@"); ok {
		return k
	}
	return "1"
}

// shortDigest is the first 12 hex digits of a digest, without its
// algorithm.
func shortDigest(d string) string {
	_, h, ok := strings.Cut(d, ":")
	if !ok {
		h = d
	}
	return truncate(h, 10)
}
