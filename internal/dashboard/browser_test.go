package dashboard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/reprolab/repro/internal/testenv"
	"github.com/reprolab/repro/internal/testenv/chromium"
)

// ArtifactsEnv names a folder where TestDashboardInBrowser also writes its
// screenshot (besides the test's artifact folder, see go test -artifacts).
const ArtifactsEnv = "REPRO_TEST_ARTIFACTS"

// TestDashboardInBrowser drives the dashboard in Debian's chromium
// (headless, through the DevTools protocol): the run list loads, a run
// opens, and the compare page, reached by picking A and B on the list and
// submitting its form (no script), shows the flipped task. It leaves a
// screenshot of the compare page.
func TestDashboardInBrowser(t *testing.T) {
	home, a, b := store(t)
	base := serve(t, &Server{Home: home}, "127.0.0.1:0", false)
	ctx := newBrowser(t)

	step := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("browser: %s: %v", what, err)
		}
	}
	text := func(what string, sel chromedp.CSS) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("browser: %s: %v", what, err)
		}
		return s
	}

	step("open the run list", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#runs")))
	list := text("read the run list", "#runs")
	step("open run A", chromedp.Click(chromedp.CSS(`a[href="/runs/`+a+`"]`)), chromedp.WaitVisible(chromedp.CSS("table")))
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	page := text("read the run page", "body")
	scripts, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("script").length`))
	if err != nil {
		t.Fatal(err)
	}
	step("pick A and B on the run list and compare",
		chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#runs")),
		chromedp.Click(chromedp.CSS(`input[name="a"][value="`+a+`"]`)),
		chromedp.Click(chromedp.CSS(`input[name="b"][value="`+b+`"]`)),
		chromedp.Click(chromedp.CSS("#compare")),
		chromedp.WaitVisible(chromedp.CSS("#flipped")))
	flipped := text("read the flipped tasks", "#flipped")
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(list, a) || !strings.Contains(list, b) {
		t.Errorf("run list lacks the runs:\n%s", list)
	}
	if !strings.Contains(title, a) || !strings.Contains(page, "✔ verified") || !strings.Contains(page, "HumanEval/1") {
		t.Errorf("run page %q:\n%s", title, page)
	}
	if scripts != 0 || !strings.Contains(page, `<script>alert("x")</script>`) {
		t.Errorf("the hostile input is not shown as text (%d script elements):\n%s", scripts, page)
	}
	if !strings.Contains(flipped, "HumanEval/1") || !strings.Contains(flipped, "fail") || !strings.Contains(flipped, "pass") {
		t.Errorf("compare page does not show the flipped task:\n%s", flipped)
	}
	saveShot(t, "dashboard-compare.png", shot)
}

// newBrowser starts Debian's chromium, headless, for the test and returns
// its context (two minutes at most).
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	testenv.Heavy(t, "chromium")
	return chromium.Start(t, 2*time.Minute, 1280, 900)
}

// saveShot writes a screenshot into the test's artifact folder and into
// $REPRO_TEST_ARTIFACTS when set.
func saveShot(t *testing.T, name string, png []byte) {
	t.Helper()
	dirs := []string{t.ArtifactDir()}
	if d := os.Getenv(ArtifactsEnv); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
}
