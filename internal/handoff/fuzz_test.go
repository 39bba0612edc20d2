package handoff

import (
	"encoding/json"
	"path"
	"strings"
	"testing"
)

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"image":"nvcr.io/nvidia/tensorflow@sha256:` + strings.Repeat("a", 64) + `","image_cuda":"11.8","gpus":8,"volumes":{"output":{"path":"/results"}}}`))
	f.Add([]byte(`{"volumes":{},"pro_games":{"decision":"include","files":[{"path":"a.sgf","sha256":"x"}]}}`))
	f.Add([]byte(`{"volumes":{"dataset":{"path":"/a/../b"}},"env":{"A":"\u0000"}}`))
	f.Add([]byte(`{"volumes":{}} {}`))
	f.Add([]byte(`{"seeds":[1,2,-3],"runs":3,"volumes":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b)
		if err != nil {
			if c != nil {
				t.Fatal("config returned with an error")
			}
			return
		}
		// An accepted text names no member twice (up to case): decoding
		// it into generic maps loses no member.
		if n, m := countMembers(t, b); n != m {
			t.Fatalf("accepted a config with a repeated member name (%d members, %d distinct)", n, m)
		}
		for _, v := range []*Volume{c.Volumes.Dataset, c.Volumes.Checkpoint, c.Volumes.Source, c.Volumes.Output, c.Volumes.Credentials} {
			if v == nil {
				continue
			}
			for _, p := range []string{v.Path, v.NodePath} {
				if p != "" && (!path.IsAbs(p) || path.Clean(p) != p || strings.ContainsAny(p, ",:\n\x00")) {
					t.Fatalf("accepted volume path %q", p)
				}
			}
		}
		for k, v := range c.Env {
			if strings.ContainsAny(k+v, "\n\r\x00") {
				t.Fatalf("accepted env %q=%q", k, v)
			}
		}
		for _, a := range c.Command {
			if a == "" || strings.ContainsAny(a, "\n\r\x00") {
				t.Fatalf("accepted command argument %q", a)
			}
		}
		ParseImageRef(c.Image)
		// What parsed once parses again the same after a round trip.
		b2, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := ParseConfig(b2)
		if err != nil {
			t.Fatalf("round trip: %v\n%s", err, b2)
		}
		b3, _ := json.Marshal(c2)
		if string(b2) != string(b3) {
			t.Fatalf("round trip changed the config:\n%s\n%s", b2, b3)
		}
	})
}

func FuzzParsePreflightReport(f *testing.F) {
	d := strings.Repeat("b", 64)
	f.Add([]byte("repro-preflight v1\nmanifest " + d + "\nworkload minigo\nmode node\nhost vm\ntime 2026-11-30T00:00:00Z\ntarget slurm\ncheck fail minigo.gpu-runtime nvidia-smi not found\nsha256 " + d + " source ml_perf/x.flags\ntree " + d + " source .\nresult fail 1\n"))
	f.Add([]byte("repro-preflight v1\nmanifest " + d + "\nmode all\nsha256 missing dataset day_0\nsha256 size-12 dataset day_1\nresult ok 0\n"))
	f.Add([]byte("repro-preflight v1\nmanifest " + d + "\nmode node\nresult ok 0\nresult ok 0\n"))
	f.Add([]byte("repro-preflight v1\nmanifest x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParsePreflightReport(b)
		if err != nil {
			return
		}
		if r.Result != "ok" && r.Result != "fail" || (r.Result == "ok") != (r.Failures == 0) {
			t.Fatalf("result %q with %d failures", r.Result, r.Failures)
		}
		if !isHex(r.Manifest, 64) {
			t.Fatalf("manifest %q", r.Manifest)
		}
		for k, v := range r.Digests {
			if !isHex(v, 64) && v != "missing" && !strings.HasPrefix(v, "size-") || !strings.Contains(k, "/") {
				t.Fatalf("digest %q for %q", v, k)
			}
		}
	})
}

func FuzzParseImageRef(f *testing.F) {
	h := strings.Repeat("c", 64)
	for _, s := range []string{"nvcr.io/nvidia/tensorflow@sha256:" + h, "pytorch/pytorch@sha256:" + h, "localhost:5000/a/b@sha256:" + h,
		"a:tag@sha256:" + h, "u:p@host/a@sha256:" + h, "nvcr.io#nvidia/x@sha256:" + h, "ubuntu", "x@sha512:" + h, "docker.io/library/x@sha256:" + h} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseImageRef(s)
		if err != nil {
			return
		}
		if strings.Count(s, "@") != 1 || strings.Contains(s, "#") {
			t.Fatalf("accepted %q", s)
		}
		r2, err := ParseImageRef(r.String())
		if err != nil || r2 != r {
			t.Fatalf("%q does not round-trip: %v", r.String(), err)
		}
		if !strings.HasPrefix(r.Enroot(), "docker://") || strings.Count(r.Enroot(), "#") > 1 {
			t.Fatalf("enroot form %q", r.Enroot())
		}
	})
}

func FuzzParseManifest(f *testing.F) {
	m := &Manifest{Format: ManifestFormat, Workload: "dlrm", Target: TargetSlurm, Pins: []Pin{{Name: "x", Class: ClassDataset, Path: "day_0", Kind: KindFile, SHA256: strings.Repeat("d", 64)}}}
	m.Seal()
	b, _ := m.Marshal()
	f.Add(b)
	f.Add([]byte(`{"format":"repro-handoff v1","digest":"00"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err != nil {
			return
		}
		got, err := m.ComputeDigest()
		if err != nil || got.Hex() != m.Digest {
			t.Fatalf("accepted a manifest whose digest does not hold")
		}
	})
}

// countMembers returns the number of object members in the JSON text b
// and the number left when each object keeps one member per name folded
// to lower case, by an independent decode into generic values.
func countMembers(t *testing.T, b []byte) (int, int) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(b)))
	var total int
	var count func() int
	// walk reads one value and returns the distinct member names it holds.
	count = func() int {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("accepted text does not tokenize: %v", err)
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return 0
		}
		distinct := 0
		if d == '{' {
			seen := map[string]bool{}
			for dec.More() {
				k, _ := dec.Token()
				total++
				if !seen[strings.ToLower(k.(string))] {
					seen[strings.ToLower(k.(string))] = true
					distinct++
				}
				distinct += count()
			}
		} else {
			for dec.More() {
				distinct += count()
			}
		}
		dec.Token() // closing delimiter
		return distinct
	}
	d := count()
	return total, d
}
