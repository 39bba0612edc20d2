package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzResults feeds arbitrary results files through parsing and both text
// renderers: no panic, and no markup from the file reaches the HTML.
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
	f.Add([]byte(`{"eval":{"<u>/1":[{"base_status":"<i>","plus_status":"fail","plus_fail_tests":[["<script>"]]}]}}`))
	f.Add([]byte(`{"eval":{"a":[]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rows, _, maxSamples, err := parseResults(b)
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
