package dashboard

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestLeaderboardInBrowser drives the board in chromium as a maintainer
// would: the boards page leads to the dataset's board; the person sees
// three ranked, verified runs and, greyed and unranked, the run whose
// record was edited to claim 95%; a click on a column heading sorts the
// rows, a click on "every run" shows all five runs; a label opens that
// run's page (its charts with their axes), and "compare with #1" opens the
// compare page. It leaves screenshots of the board, the sorted board, the
// run page and the compare page.
func TestLeaderboardInBrowser(t *testing.T) {
	home, ids := boardHome(t)
	base := serve(t, &Server{Home: home, Reference: fixtureReference}, "127.0.0.1:0", false)
	ctx := newBrowser(t)
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("browser: %s: %v", what, err)
		}
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		saveShot(t, name, png)
	}
	seen := func(js string) string { // what a script reads off the page as it is shown
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("browser: %s: %v", js, err)
		}
		return s
	}
	// rows reads the board as a person does: rank, label and evidence of
	// each row, from the rendered text.
	const rows = `Array.from(document.querySelectorAll("#board tr[data-run]")).map(r =>
		[r.cells[0].innerText, r.querySelector("a.label").innerText, r.querySelector("td.evidence").innerText.split("\n")[0]].join(" ")).join("; ")`

	do("open the boards", chromedp.Navigate(base+"/board"), chromedp.WaitVisible(chromedp.CSS("#datasets")))
	do("open the dataset's board", chromedp.Click(chromedp.CSS(`#datasets a`)), chromedp.WaitVisible(chromedp.CSS("#board")))
	if got, want := seen(rows), "1 coder-7b ✔ verified; 2 coder-7b-t0.8 ✔ verified; 3 tiny-1b ✔ verified; – edited-results ✘ NOT verified"; got != want {
		t.Errorf("the board shows %q, want %q", got, want)
	}
	grey := seen(`(() => { const c = getComputedStyle(document.querySelector("#board tr.unverified td:nth-child(4)")); return c.color + " on " + c.backgroundColor })()`)
	claimed := seen(`document.querySelector("#board tr.unverified td:nth-child(5)").innerText`)
	if grey != "rgb(138, 138, 138) on rgb(246, 246, 246)" || claimed == "95.0%" || !strings.HasSuffix(claimed, "%") {
		t.Errorf("the edited run's plus pass@1 %q shows as %s, want its verdicts' score (not the 95.0%% its record claims), greyed", claimed, grey)
	}
	if hover := seen(`document.querySelector("#matrix ~ .chart rect title").textContent`); !strings.HasPrefix(hover, "HumanEval/0 · coder-7b: base 1/1") {
		t.Errorf("the matrix's first cell names %q on hover", hover)
	}
	if n := seen(`String(document.querySelectorAll("script").length)`); n != "0" {
		t.Errorf("%s script elements on the board", n)
	}
	shot("leaderboard.png")

	do("sort by label", chromedp.Click(chromedp.CSS(`#board th a[href*="sort=label"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#board th a[href*="sort=label"][href*="order=desc"]`)))
	if got, want := seen(rows), "1 coder-7b ✔ verified; 2 coder-7b-t0.8 ✔ verified; – edited-results ✘ NOT verified; 3 tiny-1b ✔ verified"; got != want {
		t.Errorf("sorted by label: %q, want %q", got, want)
	}
	if h := seen(`document.querySelector("#board th a[href*='sort=label']").innerText`); h != "label ▲" {
		t.Errorf("the sorted column's heading reads %q", h)
	}
	do("sort by plus pass@1, worst first", chromedp.Click(chromedp.CSS(`#board th a[href$="sort=plus"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#board th a[href$="sort=plus"][href*="order=asc"]`)),
		chromedp.Click(chromedp.CSS(`#board th a[href$="sort=plus"][href*="order=asc"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#board th a[href$="sort=plus"][href*="order=desc"]`)))
	if got, want := seen(rows), "3 tiny-1b ✔ verified; 2 coder-7b-t0.8 ✔ verified; 1 coder-7b ✔ verified; – edited-results ✘ NOT verified"; got != want {
		t.Errorf("sorted by plus pass@1, ascending: %q, want %q (the unverified run stays below)", got, want)
	}
	shot("leaderboard-sorted.png")
	do("show every run", chromedp.Click(chromedp.CSS("#view-all")), chromedp.WaitVisible(chromedp.CSS("#view-newest")))
	if n := seen(`String(document.querySelectorAll("#board tr[data-run]").length)`); n != "5" {
		t.Errorf("every run: %s rows, want 5", n)
	}

	do("back to the board by rank, open a run", chromedp.Navigate(base+"/board?dataset=HumanEvalPlus-v0.1.10"), chromedp.WaitVisible(chromedp.CSS("#board")),
		chromedp.Click(chromedp.CSS(`a.label[href="/runs/`+ids[2]+`"]`)), chromedp.WaitVisible(chromedp.CSS(`svg[aria-label="Pass rate per task"]`)))
	page := seen(`document.body.innerText`)
	for _, want := range []string{"✔ verified", "Label coder-7b-t0.8, model org/coder-7b, sampling temperature=0.8,n=10,top-p=0.95", "slowest pass / limit", "samples passed", "every sample passed", "leaderboards"} {
		if !strings.Contains(page, want) {
			t.Errorf("the run page lacks %q", want)
		}
	}
	if axes, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg text.axis-title").length`)); err != nil || axes < 5 {
		t.Errorf("the run page's three charts have %d axis titles (%v), want the grid's and two for each bar chart", axes, err)
	}
	shot("leaderboard-run.png")

	do("compare tiny-1b with the leader", chromedp.Navigate(base+"/board?dataset=HumanEvalPlus-v0.1.10"), chromedp.WaitVisible(chromedp.CSS("#board")),
		chromedp.Click(chromedp.CSS(`tr[data-run="`+ids[1]+`"] a.compare`)), chromedp.WaitVisible(chromedp.CSS("#score")))
	cmp := seen(`document.body.innerText`)
	if !strings.Contains(cmp, ids[3]) || !strings.Contains(cmp, ids[1]) || strings.Count(cmp, "✔ verified") != 2 || !strings.Contains(cmp, "Tasks that changed verdict") {
		t.Errorf("the compare page:\n%s", cmp)
	}
	shot("leaderboard-compare.png")
}
