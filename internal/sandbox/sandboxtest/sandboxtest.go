// Package sandboxtest gives tests a connected sandbox engine and the
// evaluator image, built once per machine and shared by every test process.
//
// Tests that need the engine fail when it is missing where skips are
// disallowed (internal/testenv), and skip otherwise.
package sandboxtest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/testenv"
)

// CacheDir holds the shared test image: its REPRO_HOME (pin and cached
// layer) and the lock that serialises builds.
const CacheDir = "/var/tmp/repro-test-image"

// Home returns the REPRO_HOME that holds the shared test image pin.
func Home() string { return filepath.Join(CacheDir, "home") }

// Require stops a test whose engine or image is missing (testenv.Missing),
// naming what is missing and why.
func Require(t testing.TB, what string, err error) {
	t.Helper()
	testenv.Missing(t, what, err.Error()+"; scripts/deps.sh installs and starts it")
}

// Engine connects to the local Docker engine and closes it (removing any
// container it still owns) when the test ends. Its containers run under
// runc.
func Engine(t testing.TB) *sandbox.Engine {
	t.Helper()
	return EngineRuntime(t, sandbox.Runc)
}

// EngineRuntime is Engine with containers run under rt. A runtime the
// engine lacks stops the test like a missing engine (testenv.Missing).
func EngineRuntime(t testing.TB, rt sandbox.Runtime) *sandbox.Engine {
	t.Helper()
	testenv.Heavy(t, "the docker engine")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := sandbox.ConnectRuntime(ctx, rt)
	if err != nil {
		what := "the docker engine"
		if rt != sandbox.Runc {
			what = "the docker engine's runtime " + string(rt)
		}
		Require(t, what, err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// Image returns the evaluator image, building it (debootstrap, a few
// minutes) the first time on a machine or when the engine lost it. Builds
// are serialised by a file lock so that parallel test processes share one.
func Image(t testing.TB, e *sandbox.Engine) sandbox.Image {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if err := os.MkdirAll(CacheDir, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(CacheDir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if pin, err := sandbox.ReadPin(Home()); err == nil && slices.Equal(pin.Included, sandbox.ImagePackages) {
		if img, err := sandbox.PinnedImage(ctx, e, Home()); err == nil {
			return img
		}
	}
	if _, err := os.Stat("/usr/sbin/debootstrap"); err != nil {
		Require(t, "debootstrap", err)
	}
	t.Logf("building the evaluator image in %s (first run on this machine)", Home())
	img, err := sandbox.BuildImage(ctx, e, Home(), sandbox.BuildOptions{Progress: testWriter{t}})
	if exitcode.Of(err) == exitcode.Precondition {
		Require(t, "the evaluator image (built as root with debootstrap)", err)
	}
	if err != nil {
		t.Fatalf("failed to build the evaluator image: %v", err)
	}
	return img
}

// PinInto makes home a REPRO_HOME that uses the shared test image: it
// makes sure the engine holds the image (Image) and copies the image's pin
// and SBOM (sandbox/image.json, sandbox/sbom.cdx.json) into home.
func PinInto(t testing.TB, home string) {
	t.Helper()
	Image(t, Engine(t))
	from, to := layout.Home(Home()), layout.Home(home)
	if err := os.MkdirAll(to.Sandbox(), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func(layout.Home) string{layout.Home.ImagePin, layout.Home.ImageSBOM} {
		b, err := os.ReadFile(f(from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f(to), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// EachRuntime runs test once per runtime of sandbox.Runtimes, as a subtest
// named after it, with an engine for that runtime. A runtime the engine
// lacks fails its subtest where skips are disallowed and skips it
// elsewhere.
func EachRuntime(t *testing.T, test func(t *testing.T, e *sandbox.Engine)) {
	t.Helper()
	for _, rt := range sandbox.Runtimes {
		t.Run(string(rt), func(t *testing.T) {
			test(t, EngineRuntime(t, rt))
		})
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	if os.Getenv("REPRO_TEST_VERBOSE_BUILD") != "" {
		w.t.Logf("%s", p)
	}
	return len(p), nil
}
