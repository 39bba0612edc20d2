package edm

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

// loadOnly prepares a fixture run and runs the runtime's "load" action: the
// trusted loader path (hash check, unpickling, structure checks) without
// generating anything.
func loadOnly(t *testing.T, set fixtureSet, opts FIDOptions) (json.RawMessage, error) {
	t.Helper()
	st := fixtureStore(t, set)
	r, err := prepareFID(context.Background(), st, opts)
	if err != nil {
		t.Fatalf("preflight failed: %v", err)
	}
	defer r.close()
	return r.rt.run(context.Background(), "load", r.plan, r.files)
}

func wantCode(t *testing.T, err error, code exitcode.Code, substr string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want exit %d with %q", code, substr)
	}
	if got := exitcode.Of(err); got != code {
		t.Fatalf("exit %d (%v); want %d", got, err, code)
	}
	if !strings.Contains(err.Error(), substr) {
		t.Fatalf("error %q does not say %q", err, substr)
	}
}

func TestLoaderLoadsSealedCheckpoint(t *testing.T) {
	dir := fixtures(t)
	raw, err := loadOnly(t, defaultSet(dir), cpuOptions(t, []int64{0, 1}))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Network, Detector struct {
			Class      string
			Parameters int
		}
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if res.Network.Class != "EDMPrecond" || res.Network.Parameters == 0 || res.Detector.Class != "TinyDetector" {
		t.Fatalf("loaded %s", raw)
	}
}

func TestLoaderRejectsBadPayloads(t *testing.T) {
	dir := fixtures(t)
	for _, c := range []struct {
		name string
		set  func(*fixtureSet)
		want string
	}{
		{"missing-ema", func(s *fixtureSet) { s.checkpoint = filepath.Join(dir, "no-ema.pkl") }, "checkpoint has no 'ema' key"},
		{"ema-not-a-module", func(s *fixtureSet) { s.checkpoint = filepath.Join(dir, "not-module.pkl") }, "payload is a dict, not a torch.nn.Module"},
		{"detector-not-a-module", func(s *fixtureSet) { s.detector = filepath.Join(dir, "detector-not-module.pkl") }, "payload is a list, not a torch.nn.Module"},
		{"network-of-another-model", func(s *fixtureSet) { s.checkpoint = filepath.Join(dir, "wrong-shape.pkl") }, "img_resolution=16"},
	} {
		t.Run(c.name, func(t *testing.T) {
			set := defaultSet(dir)
			c.set(&set)
			_, err := loadOnly(t, set, cpuOptions(t, []int64{0, 1}))
			wantCode(t, err, exitcode.Integrity, c.want)
		})
	}
}

// canaryPickle writes a pickle of the checkpoint's size that creates canary
// when it is unpickled.
func canaryPickle(t *testing.T, size int64, canary string) string {
	p := filepath.Join(t.TempDir(), "canary.pkl")
	runScript(t, makeFixtures, "canary", p, canary, strconv.FormatInt(size, 10))
	return p
}

func TestLoaderCanaryControl(t *testing.T) {
	// The payload works: pinned and handed over sealed, it runs when
	// unpickled (the padding after it is then rejected). This shows that
	// the canary is a real witness for the tests below.
	dir := fixtures(t)
	canary := filepath.Join(t.TempDir(), "canary")
	set := defaultSet(dir)
	set.checkpoint = canaryPickle(t, fileSize(t, set.checkpoint), canary)
	_, err := loadOnly(t, set, cpuOptions(t, []int64{0, 1}))
	wantCode(t, err, exitcode.Integrity, "trailing bytes after the pickle")
	if _, err := os.Stat(canary); err != nil {
		t.Fatalf("the canary payload did not run: %v", err)
	}
}

func TestLoaderRehashesDescriptorBeforeUnpickling(t *testing.T) {
	dir := fixtures(t)
	set := defaultSet(dir)
	canary := filepath.Join(t.TempDir(), "canary")
	evil, err := os.ReadFile(canaryPickle(t, fileSize(t, set.checkpoint), canary))
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(set.checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name          string
		allowUnsealed bool
		want          string
	}{
		// A descriptor whose bytes change after repro checked them: the
		// runtime hashes it again and stops before pickle.load.
		{"swapped-after-check", true, "sha256 mismatch"},
		// Without the test-only allowance, an unsealed descriptor is
		// refused before it is even hashed.
		{"unsealed", false, "not a sealed memory file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checkpoint.pkl")
			if err := os.WriteFile(path, good, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st := fixtureStore(t, set)
			opts := cpuOptions(t, []int64{0, 1})
			opts.test.replace = map[string]*os.File{fixtureModel: f}
			opts.test.allowUnsealed = c.allowUnsealed
			r, err := prepareFID(context.Background(), st, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer r.close()
			// Go's checks are done; now the bytes behind the descriptor change.
			w, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.WriteAt(evil, 0); err != nil {
				t.Fatal(err)
			}
			w.Close()
			_, err = r.rt.run(context.Background(), "load", r.plan, r.files)
			wantCode(t, err, exitcode.Integrity, c.want)
			if _, err := os.Stat(canary); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the swapped pickle was unpickled: canary %v", err)
			}
		})
	}
}

func fileSize(t *testing.T, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
