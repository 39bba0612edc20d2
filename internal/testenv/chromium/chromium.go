// Package chromium starts Debian's chromium, headless, for a test that
// drives a page through the DevTools protocol (chromedp).
package chromium

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/reprolab/repro/internal/testenv"
)

// Start starts chromium, headless, without its sandbox and GPU, with a
// window of width by height pixels and a profile in a temporary folder,
// and returns the chromedp context of its first tab. The browser, and
// every action on the context, stops after timeout or when t ends. A
// machine without chromium is testenv.Missing.
func Start(t testing.TB, timeout time.Duration, width, height int) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		testenv.Missing(t, "chromium", "install Debian's chromium (scripts/deps.sh does)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(width, height))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelBrowser := chromedp.NewContext(ctx)
	t.Cleanup(cancelBrowser)
	return ctx
}
