package report

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/strictjson"
)

// wholeRows are the rows of a results file decoded whole, as parseResults
// read them before it read the file a task at a time.
func wholeRows(b []byte) ([]TaskRow, error) {
	var res codebench.ResultsFile
	if err := strictjson.DecodeOpen(b, &res); err != nil {
		return nil, err
	}
	// An entry names the task it is listed under (codebench.ReadResults).
	for id, es := range res.Eval {
		for _, e := range es {
			if e.TaskID != id {
				return nil, fmt.Errorf("an entry of %q names %q", id, e.TaskID)
			}
		}
	}
	ids := slices.Collect(maps.Keys(res.Eval))
	sort.Slice(ids, func(i, j int) bool { return taskLess(ids[i], ids[j]) })
	rows := []TaskRow{}
	for _, id := range ids {
		rows = append(rows, taskRow(id, res.Eval[id]))
	}
	return rows, nil
}

// FuzzResults feeds arbitrary results files through parsing and both text
// renderers: the rows are those of the file decoded whole (and the same
// files are refused), no panic, and no markup from the file reaches the
// HTML.
func FuzzResults(f *testing.F) {
	runsDir := filepath.Join(fixtureHome, "runs")
	ents, err := os.ReadDir(runsDir)
	if err != nil || len(ents) != 1 {
		f.Fatalf("fixture: %v", err)
	}
	seed, err := os.ReadFile(filepath.Join(runsDir, ents[0].Name(), "eval_results.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"eval":{"<u>/1":[{"task_id":"<u>/1","base_status":"<i>","plus_status":"fail","plus_fail_tests":[["<script>"]]}]}}`))
	f.Add([]byte(`{"eval":{"<u>/1":[{"base_status":"<i>","plus_status":"fail","plus_fail_tests":[["<script>"]]}]}}`))
	f.Add([]byte(`{"eval":{"a":[]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rows, _, maxSamples, _, err := parseResults(bytes.NewReader(b))
		want, werr := wholeRows(b)
		if (err == nil) != (werr == nil) || err == nil && !reflect.DeepEqual(rows, want) {
			t.Fatalf("read a task at a time: %v, %+v; decoded whole: %v, %+v", err, rows, werr, want)
		}
		if err != nil {
			return
		}
		he := &HumanEval{Rows: rows, MaxSamples: maxSamples, ResultsFound: true, BasePassAtK: map[string]float64{}}
		rep := &Report{Schema: Schema, HumanEval: he}
		var html, md bytes.Buffer
		if err := Write(&html, rep, "html"); err != nil {
			t.Fatal(err)
		}
		if err := Write(&md, rep, "md"); err != nil {
			t.Fatal(err)
		}
		body := html.String()[strings.Index(html.String(), "<body>"):]
		for _, tag := range []string{"<script", "<img", "<i>", "<u>"} {
			if strings.Contains(body, tag) || strings.Contains(md.String(), tag) {
				t.Fatalf("markup %s from the results reached a report", tag)
			}
		}
	})
}

// FuzzIngest feeds arbitrary ingest records through parsing and the HTML
// renderer: no panic, and no markup from the record reaches the page.
func FuzzIngest(f *testing.F) {
	f.Add([]byte(`{"workload":"minigo","verdict":"ok","preflight":[{"file":"<i>","result":"ok"}],"runs":[{"index":1,"minutes":3.5,"problems":["<script>"]}],"score":{"minutes":1,"note":"<u>"}}`))
	f.Add([]byte(`{"runs":[{}],"score":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseIngest(b)
		if err != nil {
			return
		}
		var html bytes.Buffer
		if err := Write(&html, &Report{Schema: Schema, Handoff: h}, "html"); err != nil {
			t.Fatal(err)
		}
		body := html.String()[strings.Index(html.String(), "<body>"):]
		for _, tag := range []string{"<script", "<img", "<i>", "<u>"} {
			if strings.Contains(body, tag) {
				t.Fatalf("markup %s from the ingest record reached the page", tag)
			}
		}
	})
}

// FuzzMLLOG feeds arbitrary MLLOG run reports through parsing and both
// text renderers: no panic, and no markup from the report reaches a page.
func FuzzMLLOG(f *testing.F) {
	f.Add([]byte(`{"ruleset":"<i>","compliant":true,"files":[{"file":"<script>.txt","benchmark":"minigo","compliant":true,"minutes":1.5,"target":"in [0.5, 1)","target_value":0.5,"accuracy":[{"line":1,"epoch":1,"value":0.2},{"line":2,"epoch":2,"value":0.6,"reached":true}],"findings":[{"severity":"error","message":"<u>"}]}],"scores":[{"benchmark":"<img>","runs":1,"minutes":2,"note":"<u>"}]}`))
	f.Add([]byte(`{"files":[null,{"accuracy":[{"value":1e308,"epoch":-1e308},{"value":-1e308}]}],"scores":[]}`))
	f.Add([]byte(`{"files":[{"benchmark":"dlrm","accuracy":[{"value":0.8}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseMLLOG(b)
		if err != nil {
			return
		}
		rep := &Report{Schema: Schema, MLLOG: m}
		var html, md bytes.Buffer
		if err := Write(&html, rep, "html"); err != nil {
			t.Fatal(err)
		}
		if err := Write(&md, rep, "md"); err != nil {
			t.Fatal(err)
		}
		body := html.String()[strings.Index(html.String(), "<body>"):]
		for _, tag := range []string{"<script", "<img", "<i>", "<u>"} {
			if strings.Contains(body, tag) || strings.Contains(md.String(), tag) {
				t.Fatalf("markup %s from the MLLOG report reached a report", tag)
			}
		}
	})
}
