package trust_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/trust"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

func sign(t *testing.T, s *keys.Signer, payload string) *dsse.Envelope {
	t.Helper()
	es, err := dsse.NewEnvelopeSigner(s)
	if err != nil {
		t.Fatal(err)
	}
	env, err := es.SignPayload(t.Context(), "application/vnd.in-toto+json", []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func tm(s string) *time.Time {
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &v
}

func fileOf(t *testing.T, ks ...trust.Key) *trust.File {
	t.Helper()
	b, err := json.Marshal(trust.File{Version: trust.Version, Keys: ks})
	if err != nil {
		t.Fatal(err)
	}
	f, err := trust.Parse(b)
	if err != nil {
		t.Fatalf("Parse of a marshalled file: %v", err)
	}
	return f
}

func TestVerify(t *testing.T) {
	old, _ := keys.Generate()
	cur, _ := keys.Generate()
	img, _ := keys.Generate()
	stranger, _ := keys.Generate()
	f := fileOf(t,
		trust.NewKey("old", old.PublicKey(), []trust.Purpose{trust.RunRecords}, tm("2026-01-01T00:00:00Z"), tm("2026-06-01T00:00:00Z")),
		trust.NewKey("current", cur.PublicKey(), []trust.Purpose{trust.RunRecords}, tm("2026-06-01T00:00:00Z"), nil),
		trust.NewKey("images", img.PublicKey(), []trust.Purpose{trust.Images}, nil, nil),
	)
	in := func(s string) time.Time { return *tm(s) }
	cases := []struct {
		name    string
		env     *dsse.Envelope
		purpose trust.Purpose
		at      time.Time
		want    error
		key     string
	}{
		{"rotated key inside its window", sign(t, old, "a"), trust.RunRecords, in("2026-03-01T00:00:00Z"), nil, "old"},
		{"rotated key after its window", sign(t, old, "a"), trust.RunRecords, in("2026-07-01T00:00:00Z"), trust.ErrOutsideWindow, ""},
		{"current key", sign(t, cur, "a"), trust.RunRecords, in("2026-07-01T00:00:00Z"), nil, "current"},
		{"current key before its window", sign(t, cur, "a"), trust.RunRecords, in("2026-05-01T00:00:00Z"), trust.ErrOutsideWindow, ""},
		{"key not in the file", sign(t, stranger, "a"), trust.RunRecords, in("2026-07-01T00:00:00Z"), trust.ErrUntrustedKey, ""},
		{"image key for run records", sign(t, img, "a"), trust.RunRecords, in("2026-07-01T00:00:00Z"), trust.ErrUntrustedKey, ""},
		{"image key for images", sign(t, img, "a"), trust.Images, in("2026-07-01T00:00:00Z"), nil, "images"},
		{"no signature", &dsse.Envelope{PayloadType: "x", Payload: "YQ=="}, trust.RunRecords, in("2026-07-01T00:00:00Z"), trust.ErrUnsigned, ""},
	}
	tampered := sign(t, cur, "a")
	tampered.Payload = "Yg==" // "b"
	cases = append(cases, struct {
		name    string
		env     *dsse.Envelope
		purpose trust.Purpose
		at      time.Time
		want    error
		key     string
	}{"payload changed", tampered, trust.RunRecords, in("2026-07-01T00:00:00Z"), trust.ErrBadSignature, ""})
	retyped := sign(t, cur, "a")
	retyped.PayloadType = "application/json"
	cases = append(cases, struct {
		name    string
		env     *dsse.Envelope
		purpose trust.Purpose
		at      time.Time
		want    error
		key     string
	}{"payload type changed", retyped, trust.RunRecords, in("2026-07-01T00:00:00Z"), trust.ErrBadSignature, ""})
	for _, c := range cases {
		k, err := f.Verify(c.env, c.purpose, c.at)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			} else if k.Name != c.key {
				t.Errorf("%s: verified by %q, want %q", c.name, k.Name, c.key)
			}
			continue
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	a, _ := keys.Generate()
	b, _ := keys.Generate()
	good := trust.NewKey("a", a.PublicKey(), []trust.Purpose{trust.RunRecords}, nil, nil)
	mk := func(edit func(m map[string]any)) []byte {
		raw, _ := json.Marshal(trust.File{Version: 1, Keys: []trust.Key{good}})
		var m map[string]any
		json.Unmarshal(raw, &m)
		edit(m)
		out, _ := json.Marshal(m)
		return out
	}
	key0 := func(m map[string]any) map[string]any { return m["keys"].([]any)[0].(map[string]any) }
	cases := map[string][]byte{
		"version 2":         mk(func(m map[string]any) { m["version"] = 2 }),
		"unknown field":     mk(func(m map[string]any) { m["trust_everyone"] = true }),
		"id of another key": mk(func(m map[string]any) { key0(m)["key_id"] = keys.ID(b.PublicKey()) }),
		"no name":           mk(func(m map[string]any) { key0(m)["name"] = "" }),
		"no purposes":       mk(func(m map[string]any) { key0(m)["purposes"] = []string{} }),
		"unknown purpose":   mk(func(m map[string]any) { key0(m)["purposes"] = []string{"everything"} }),
		"empty window": mk(func(m map[string]any) {
			key0(m)["not_before"] = "2027-01-01T00:00:00Z"
			key0(m)["not_after"] = "2026-01-01T00:00:00Z"
		}),
		"duplicate name":                      mk(func(m map[string]any) { m["keys"] = append(m["keys"].([]any), m["keys"].([]any)[0]) }),
		"signature required but no image key": mk(func(m map[string]any) { m["image"] = map[string]any{"require_signature": true} }),
		"scan age zero": mk(func(m map[string]any) {
			m["image"] = map[string]any{"scan": map[string]any{"max_age_days": 0, "max_severity": "high"}}
		}),
		"production without an image key": mk(func(m map[string]any) { m["image"] = map[string]any{"profile": "production"} }),
		"unknown profile":                 mk(func(m map[string]any) { m["image"] = map[string]any{"profile": "staging"} }),
		"unknown runtime":                 mk(func(m map[string]any) { m["image"] = map[string]any{"runtime": "kata"} }),
		"production with runc": mk(func(m map[string]any) {
			key0(m)["purposes"] = []string{"images"}
			m["image"] = map[string]any{"profile": "production", "runtime": "runc"}
		}),
		"trailing data": append(mk(func(map[string]any) {}), "{}"...),
	}
	for name, b := range cases {
		if _, err := trust.Parse(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := trust.Parse(mk(func(map[string]any) {})); err != nil {
		t.Fatalf("the unedited file: %v", err)
	}
}

// TestProductionProfile: the one setting turns on the runtime, the
// signature and a scan; a stated scan policy takes the default's place.
func TestProductionProfile(t *testing.T) {
	a, _ := keys.Generate()
	k := trust.NewKey("img", a.PublicKey(), []trust.Purpose{trust.Images}, nil, nil)
	parse := func(image string) *trust.File {
		t.Helper()
		kb, _ := json.Marshal([]trust.Key{k})
		f, err := trust.Parse([]byte(`{"version": 1, "keys": ` + string(kb) + `, "image": ` + image + `}`))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	e := parse(`{"profile": "production"}`).Image.Effective()
	if !e.RequireSignature || e.Runtime != trust.RuntimeGVisor || e.Scan == nil || *e.Scan != trust.DefaultScanPolicy {
		t.Errorf("production profile: %+v", e)
	}
	e = parse(`{"profile": "production", "scan": {"max_age_days": 1, "max_severity": "medium"}}`).Image.Effective()
	if e.Scan.MaxAgeDays != 1 || e.Scan.MaxSeverity != "medium" {
		t.Errorf("stated scan policy: %+v", e.Scan)
	}
	if f := parse(`{}`); !f.Image.RequiresNothing() {
		t.Error("an empty image policy requires something")
	}
	if f := parse(`{"profile": "production"}`); f.Image.RequiresNothing() {
		t.Error("the production profile requires nothing")
	}
}

func TestLoad(t *testing.T) {
	a, _ := keys.Generate()
	raw, _ := json.MarshalIndent(trust.File{Version: 1, Keys: []trust.Key{trust.NewKey("a", a.PublicKey(), []trust.Purpose{trust.Images}, nil, nil)}, Image: trust.ImagePolicy{RequireSignature: true}}, "", "  ")
	dir := t.TempDir()
	p := filepath.Join(dir, "trust.json")
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := trust.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Image.RequireSignature || len(f.For(trust.Images)) != 1 {
		t.Fatalf("loaded %+v", f)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(strings.Repeat(" ", trust.MaxFileSize+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := trust.Load(big); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Fatalf("oversized file: %v", err)
	}
	if _, err := trust.Load(dir); err == nil {
		t.Fatal("a folder loaded as a trust file")
	}
}

func FuzzParse(f *testing.F) {
	a, _ := keys.Generate()
	raw, _ := json.Marshal(trust.File{Version: 1, Keys: []trust.Key{trust.NewKey("a", a.PublicKey(), []trust.Purpose{trust.Images, trust.RunRecords}, tm("2026-01-01T00:00:00Z"), nil)}, Image: trust.ImagePolicy{RequireSignature: true, Scan: &trust.ScanPolicy{MaxAgeDays: 7, MaxSeverity: "high"}}})
	f.Add(raw)
	f.Add([]byte(`{"version":1,"keys":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tf, err := trust.Parse(b)
		if err != nil {
			return
		}
		for i := range tf.Keys {
			if keys.ID(tf.Keys[i].Public()) != tf.Keys[i].ID {
				t.Fatal("accepted a key whose id does not match")
			}
		}
	})
}
