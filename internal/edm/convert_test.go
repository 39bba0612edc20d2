package edm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
)

// compareWithTorch checks a converted file against the state_dict() that
// PyTorch itself produces from the pickle, bit for bit.
func compareWithTorch(t *testing.T, pkl, safetensors string, wantTensors int) {
	t.Helper()
	out := runScript(t, makeFixtures, "compare", srcTree(t), pkl, safetensors)
	var res struct {
		Tensors  int
		Problems []string
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("compare output %q: %v", out, err)
	}
	if len(res.Problems) > 0 || res.Tensors != wantTensors || res.Tensors == 0 {
		t.Fatalf("converted %d tensors, state_dict has %d: %v", wantTensors, res.Tensors, res.Problems)
	}
}

func TestConvertThroughStore(t *testing.T) {
	dir := fixtures(t)
	set := defaultSet(dir)
	st := fixtureStore(t, set)
	m, _ := LookupModel(fixtureModel)
	for _, c := range []struct {
		id, pkl, class string
		sourcePinned   bool
	}{
		{m.Checkpoint, set.checkpoint, "EDMPrecond", true},
		{m.Detector, set.detector, "TinyDetector", false},
	} {
		t.Run(c.id, func(t *testing.T) {
			res, err := Convert(context.Background(), st, c.id)
			if err != nil {
				t.Fatal(err)
			}
			pin, _, _ := digest.File(c.pkl)
			state, _ := st.StateDir("edm")
			if res.Dir != filepath.Join(state, c.id, pin.Hex()) {
				t.Fatalf("written to %s", res.Dir)
			}
			if res.Record.Class != c.class || res.Record.Asset != pin {
				t.Fatalf("record %+v", res.Record)
			}
			if c.sourcePinned && (res.Record.SourceMatchesPin == nil || !*res.Record.SourceMatchesPin) {
				t.Fatalf("embedded networks.py does not match the pinned source: %+v", res.Record)
			}
			got, n, err := digest.File(res.Safetensors)
			if err != nil || got != res.Record.SafetensorsSHA256 || n != res.Record.SafetensorsSize {
				t.Fatalf("safetensors %s %d, record %+v (%v)", got.Hex(), n, res.Record, err)
			}
			b, err := os.ReadFile(res.Config)
			if err != nil {
				t.Fatal(err)
			}
			var cfg ConvertConfig
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Fatal(err)
			}
			if cfg.Format != ConvertFormat || cfg.Network.NetworkClass != c.class || cfg.Network.Asset.SHA256 != pin ||
				len(cfg.Network.Sources) == 0 || string(cfg.Network.InitKwargs) == "null" {
				t.Fatalf("config.json %s", b)
			}
			compareWithTorch(t, c.pkl, res.Safetensors, res.Record.Tensors)
		})
	}
}

func TestConvertFailsClosed(t *testing.T) {
	dir := fixtures(t)
	m, _ := LookupModel(fixtureModel)
	t.Run("unpinned", func(t *testing.T) {
		st := fixtureStore(t, defaultSet(dir), m.Checkpoint)
		_, err := Convert(context.Background(), st, m.Checkpoint)
		wantCode(t, err, exitcode.Precondition, "repro catalog review")
		state, _ := st.StateDir("edm")
		if ents, _ := os.ReadDir(state); len(ents) != 0 {
			t.Fatalf("wrote %v", ents)
		}
	})
	t.Run("tampered", func(t *testing.T) {
		st := fixtureStore(t, defaultSet(dir))
		storeHandle{st.Home()}.corrupt(t, m.Checkpoint)
		_, err := Convert(context.Background(), st, m.Checkpoint)
		wantCode(t, err, exitcode.Integrity, "sha256 mismatch")
	})
	t.Run("not-fetched", func(t *testing.T) {
		st := fixtureStore(t, defaultSet(dir))
		storeHandle{st.Home()}.remove(t, m.Checkpoint)
		_, err := Convert(context.Background(), st, m.Checkpoint)
		wantCode(t, err, exitcode.Precondition, "repro fetch")
	})
	t.Run("no-ema", func(t *testing.T) {
		set := defaultSet(dir)
		set.checkpoint = filepath.Join(dir, "no-ema.pkl")
		st := fixtureStore(t, set)
		_, err := Convert(context.Background(), st, m.Checkpoint)
		wantCode(t, err, exitcode.Integrity, "cannot be converted safely")
	})
	t.Run("code-execution-payload", func(t *testing.T) {
		canary := filepath.Join(t.TempDir(), "canary")
		set := defaultSet(dir)
		set.checkpoint = canaryPickle(t, 4096, canary)
		st := fixtureStore(t, set)
		_, err := Convert(context.Background(), st, m.Checkpoint)
		wantCode(t, err, exitcode.Integrity, "cannot be converted safely")
		if _, err := os.Stat(canary); err == nil {
			t.Fatal("conversion ran the payload")
		}
	})
	t.Run("unknown-id", func(t *testing.T) {
		st := fixtureStore(t, defaultSet(dir))
		_, err := Convert(context.Background(), st, "fid-ref-cifar10-32x32")
		wantCode(t, err, exitcode.Usage, "unknown EDM model")
	})
}

// The safe path loads converted tensors into classes rebuilt from source;
// it must generate exactly what the pickle path generates.
func TestSafeModeMatchesPicklePath(t *testing.T) {
	dir := fixtures(t)
	st := fixtureStore(t, defaultSet(dir))
	seeds := []int64{10, 11, 12, 13}
	plain, err := RunFID(context.Background(), st, cpuOptions(t, seeds))
	if err != nil {
		t.Fatal(err)
	}
	opts := cpuOptions(t, seeds)
	opts.Safe = true
	safe, err := RunFID(context.Background(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !safe.Safe || len(safe.Converted) != 2 || safe.Converted[0].Class != "EDMPrecond" || safe.Converted[1].Class != "TinyDetector" {
		t.Fatalf("safe result %+v", safe)
	}
	if plain.Features.SHA256 != safe.Features.SHA256 || plain.FID != safe.FID {
		t.Fatalf("safe path differs: features %s vs %s, FID %g vs %g", safe.Features.SHA256.Hex(), plain.Features.SHA256.Hex(), safe.FID, plain.FID)
	}
	var rt struct{ Network, Detector struct{ Module string } }
	if err := json.Unmarshal(safe.Runtime, &rt); err != nil || rt.Network.Module != "training.networks" {
		t.Fatalf("safe network not rebuilt from the pinned source: %s (%v)", safe.Runtime, err)
	}
}

func TestSafeModeNeedsMatchingSource(t *testing.T) {
	dir := fixtures(t)
	// A checkout whose networks.py differs from the one embedded in the
	// checkpoint, pinned as the EDM source: --safe must refuse to rebuild.
	src := copySource(t)
	appendFile(t, filepath.Join(src, "training", "networks.py"), "\n# changed\n")
	st := fixtureStoreSrc(t, defaultSet(dir), src)
	opts := cpuOptions(t, []int64{0, 1})
	opts.Safe, opts.SourceDir = true, src
	_, err := RunFID(context.Background(), st, opts)
	wantCode(t, err, exitcode.Precondition, "embeds a different networks.py")
}
