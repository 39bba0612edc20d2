package runs

import (
	"archive/tar"
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/tarball"
	"github.com/reprolab/repro/internal/tarball/tarballtest"
	"github.com/reprolab/repro/internal/trust"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"google.golang.org/protobuf/encoding/protojson"
)

func readEnvelope(t *testing.T, dir string) *dsse.Envelope {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, envelopeFile))
	if err != nil {
		t.Fatal(err)
	}
	var env dsse.Envelope
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	return &env
}

func writeEnvelope(t *testing.T, dir string, env *dsse.Envelope) {
	t.Helper()
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, envelopeFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeTrustFile(t *testing.T, home string, ks ...trust.Key) {
	t.Helper()
	if err := WriteTrust(layout.Home(home).Trust(), &trust.File{Version: trust.Version, Keys: ks}); err != nil {
		t.Fatal(err)
	}
}

func TestRecordIsAnInTotoStatement(t *testing.T) {
	_, r := finishedRun(t)
	env := readEnvelope(t, r.Dir)
	if env.PayloadType != "application/vnd.in-toto+json" {
		t.Fatalf("payload type %q", env.PayloadType)
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		t.Fatal(err)
	}
	var st intoto.Statement
	if err := protojson.Unmarshal(payload, &st); err != nil {
		t.Fatal(err)
	}
	if err := st.Validate(); err != nil || st.Type != intoto.StatementTypeUri || st.PredicateType != PredicateType {
		t.Fatalf("statement %v: %v", &st, err)
	}
	var names []string
	for _, s := range st.Subject {
		names = append(names, s.Name)
		f := filepath.Join(r.Dir, filepath.FromSlash(s.Name))
		d, _, err := digest.File(f)
		if err != nil || d.Hex() != s.Digest["sha256"] {
			t.Errorf("subject %s: sha256 %s, file %s (%v)", s.Name, s.Digest["sha256"], d.Hex(), err)
		}
	}
	slices.Sort(names)
	if want := []string{ProvenanceFile, "record.json", "results.json", TestResultFile, "workspace/samples.jsonl"}; !slices.Equal(names, want) {
		t.Fatalf("subjects %q, want %q", names, want)
	}
	if got := st.Predicate.AsMap()["id"]; got != r.ID {
		t.Fatalf("predicate id %v, want %s", got, r.ID)
	}
	if env.Signatures[0].KeyID != keys.ID(mustLocal(t, filepath.Dir(filepath.Dir(r.Dir))).PublicKey()) {
		t.Fatalf("signature key id %q is not the standard key id", env.Signatures[0].KeyID)
	}
}

func mustLocal(t *testing.T, home string) *keys.Signer {
	t.Helper()
	s, err := LocalKey(home)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// resign replaces the envelope's statement with edit's result, signed with
// home's run key, as a holder of a trusted key could.
func resign(t *testing.T, home, dir string, edit func(st *intoto.Statement)) {
	t.Helper()
	env := readEnvelope(t, dir)
	payload, _ := env.DecodeB64Payload()
	var st intoto.Statement
	if err := protojson.Unmarshal(payload, &st); err != nil {
		t.Fatal(err)
	}
	edit(&st)
	nb, err := protojson.Marshal(&st)
	if err != nil {
		t.Fatal(err)
	}
	eb, err := signEnvelope(mustLocal(t, home), PayloadType, nb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, envelopeFile), eb, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTamperingOneChangeAtATime makes one change to a verified run and
// checks that verify exits 4 naming it.
func TestTamperingOneChangeAtATime(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		tamper     func(t *testing.T, home, dir string)
	}{
		{"an output byte", "results.json: content changed", func(t *testing.T, _, dir string) {
			p := filepath.Join(dir, "results.json")
			b, _ := os.ReadFile(p)
			b[len(b)-2] ^= 1
			os.WriteFile(p, b, 0o644)
		}},
		{"a nested output removed", "workspace/samples.jsonl: signed file is missing", func(t *testing.T, _, dir string) {
			os.Remove(filepath.Join(dir, "workspace", "samples.jsonl"))
		}},
		{"a file added", "planted: file not in the signed record", func(t *testing.T, _, dir string) {
			os.WriteFile(filepath.Join(dir, "planted"), []byte("x"), 0o644)
		}},
		{"the record", "record.json: differs from the signed statement", func(t *testing.T, _, dir string) {
			p := filepath.Join(dir, recordFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte(`"pass@1": 1`), []byte(`"pass@1": 0.5`), 1), 0o644)
		}},
		{"the envelope's payload", "record.dsse.json: signature does not verify", func(t *testing.T, _, dir string) {
			env := readEnvelope(t, dir)
			payload, _ := env.DecodeB64Payload()
			env.Payload = base64.StdEncoding.EncodeToString(bytes.Replace(payload, []byte("results.json"), []byte("results.jsom"), 1))
			writeEnvelope(t, dir, env)
		}},
		{"the envelope's payload type", "record.dsse.json: signature envelope has payload type \"text/plain\"", func(t *testing.T, _, dir string) {
			env := readEnvelope(t, dir)
			env.PayloadType = "text/plain"
			writeEnvelope(t, dir, env)
		}},
		{"the signature", "record.dsse.json: signature does not verify with key \"local\"", func(t *testing.T, _, dir string) {
			env := readEnvelope(t, dir)
			sig, _ := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
			sig[7] ^= 0x80
			env.Signatures[0].Sig = base64.StdEncoding.EncodeToString(sig)
			writeEnvelope(t, dir, env)
		}},
		{"the envelope removed", "record.dsse.json: missing or unreadable signature envelope", func(t *testing.T, _, dir string) {
			os.Remove(filepath.Join(dir, envelopeFile))
		}},
		{"a key not in the trust file", "not signed by a trusted key", func(t *testing.T, home, _ string) {
			other, _ := keys.Generate()
			writeTrustFile(t, home, trust.NewKey("someone-else", other.PublicKey(), []trust.Purpose{trust.RunRecords}, nil, nil))
		}},
		{"the key trusted only for images", "not signed by a trusted key for run-records", func(t *testing.T, home, _ string) {
			writeTrustFile(t, home, trust.NewKey("local", mustLocal(t, home).PublicKey(), []trust.Purpose{trust.Images}, nil, nil))
		}},
		{"an expired key", "signing key was not valid at the signing time: key \"local\"", func(t *testing.T, home, _ string) {
			end := time.Now().Add(-time.Hour)
			writeTrustFile(t, home, trust.NewKey("local", mustLocal(t, home).PublicKey(), []trust.Purpose{trust.RunRecords}, nil, &end))
		}},
		{"a key not yet valid", "signing key was not valid at the signing time", func(t *testing.T, home, _ string) {
			start := time.Now().Add(time.Hour)
			writeTrustFile(t, home, trust.NewKey("local", mustLocal(t, home).PublicKey(), []trust.Purpose{trust.RunRecords}, &start, nil))
		}},
		{"a subject removed (re-signed)", "results.json: file not in the signed record", func(t *testing.T, home, dir string) {
			resign(t, home, dir, func(st *intoto.Statement) {
				st.Subject = slices.DeleteFunc(st.Subject, func(s *intoto.ResourceDescriptor) bool { return s.Name == "results.json" })
			})
		}},
		{"record.json left out of the statement (re-signed)", "record.json: the signed statement does not name record.json", func(t *testing.T, home, dir string) {
			resign(t, home, dir, func(st *intoto.Statement) {
				st.Subject = slices.DeleteFunc(st.Subject, func(s *intoto.ResourceDescriptor) bool { return s.Name == recordFile })
			})
		}},
		{"another predicate type (re-signed)", "predicate type \"https://example.org/other/v1\"", func(t *testing.T, home, dir string) {
			resign(t, home, dir, func(st *intoto.Statement) { st.PredicateType = "https://example.org/other/v1" })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, r := finishedRun(t)
			if _, _, err := r.Verify(); err != nil {
				t.Fatalf("before tampering: %v", err)
			}
			tc.tamper(t, home, r.Dir)
			_, problems, err := r.Verify()
			if exitcode.Of(err) != exitcode.Integrity || len(problems) == 0 {
				t.Fatalf("not refused with exit 4: %v %v", problems, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not name the change (%q):\n%v", tc.want, err)
			}
		})
	}
}

func TestNoTrustFileIsAPrecondition(t *testing.T) {
	home, r := finishedRun(t)
	os.Remove(layout.Home(home).Trust())
	if _, _, err := r.Verify(); exitcode.Of(err) != exitcode.Precondition || !strings.Contains(err.Error(), "--trust FILE") {
		t.Fatalf("verify without a trust file: %v", err)
	}
}

func TestRotateKeepsOldRecordsVerifying(t *testing.T) {
	home, a := finishedRun(t)
	oldID, newID, err := RotateKey(home, time.Now())
	if err != nil || oldID == newID {
		t.Fatalf("rotate: %s %s %v", oldID, newID, err)
	}
	b, err := Create(home, "humaneval")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Finish(b.NewRecord("test"), 0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		r  *Run
		id string
	}{{a, oldID}, {b, newID}} {
		if _, _, err := tc.r.Verify(); err != nil {
			t.Fatalf("run %s after rotation: %v", tc.r.ID, err)
		}
		if got := readEnvelope(t, tc.r.Dir).Signatures[0].KeyID; got != tc.id {
			t.Fatalf("run %s signed by %s, want %s", tc.r.ID, got, tc.id)
		}
	}
	tf, err := LoadTrust(home, "")
	if err != nil || len(tf.Keys) != 2 || tf.Keys[0].NotAfter == nil || tf.Keys[1].NotBefore == nil {
		t.Fatalf("trust file after rotation: %+v %v", tf, err)
	}
	if tf.Keys[0].ValidAt(time.Now()) {
		t.Fatal("the retired key is still valid now")
	}
	// Without the retired key in the trust file, the old record is refused.
	writeTrustFile(t, home, tf.Keys[1])
	if _, _, err := a.Verify(); exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "not signed by a trusted key") {
		t.Fatalf("old record without its key trusted: %v", err)
	}
}

func TestLegacyRecordStillVerifies(t *testing.T) {
	home := t.TempDir()
	copyDir(t, "testdata/legacy", home)
	ids, _ := List(home)
	r, err := Open(home, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	tf, err := LoadTrust(home, "")
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.VerifyWith(tf)
	if err != nil || !v.Legacy || v.Key == nil || v.Key.Name != "local" {
		t.Fatalf("legacy record: %+v %v", v, err)
	}
	p := filepath.Join(r.Dir, "eval_results.json")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, append(b, ' '), 0o644)
	if _, err := r.VerifyWith(tf); exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "eval_results.json: content changed") {
		t.Fatalf("tampered legacy record: %v", err)
	}
}

// TestLegacyKeyIsMigratedOnce writes a run key in the seed-only format and
// an envelope signed with it under the key id repro used then, and checks
// that the key is rewritten as PKCS #8 with the same key and the envelope
// still verifies.
func TestLegacyKeyIsMigratedOnce(t *testing.T) {
	home := t.TempDir()
	seed := bytes.Repeat([]byte{7}, ed25519.SeedSize)
	priv := ed25519.NewKeyFromSeed(seed)
	os.MkdirAll(layout.Home(home).Keys(), 0o700)
	p := LocalKeyPath(home)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: legacyKeyType, Bytes: seed}), 0o600); err != nil {
		t.Fatal(err)
	}
	payload := []byte(`{"scan":"x"}`)
	pub := priv.Public().(ed25519.PublicKey)
	old := dsse.Envelope{PayloadType: "application/vnd.in-toto+json", Payload: base64.StdEncoding.EncodeToString(payload),
		Signatures: []dsse.Signature{{KeyID: digest.Of(pub).Hex(), Sig: base64.StdEncoding.EncodeToString(ed25519.Sign(priv, dsse.PAE("application/vnd.in-toto+json", payload)))}}}
	eb, _ := json.Marshal(old)

	s, err := LocalKey(home)
	if err != nil {
		t.Fatal(err)
	}
	if !s.PublicKey().Equal(pub) {
		t.Fatal("migration changed the key")
	}
	if _, err := keys.LoadPrivate(p); err != nil {
		t.Fatalf("migrated key is not PKCS #8: %v", err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("migrated key has mode %v", fi.Mode())
	}
	if got, err := keys.LoadPublic(LocalPublicKeyPath(home)); err != nil || !got.Equal(pub) {
		t.Fatalf("public key file: %v", err)
	}
	got, err := OpenEnvelope(home, "application/vnd.in-toto+json", eb)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("envelope signed before the migration: %q %v", got, err)
	}
}

func TestWidePermissionKeyIsRefused(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		home := t.TempDir()
		mustLocal(t, home)
		p := LocalKeyPath(home)
		if legacy {
			os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: legacyKeyType, Bytes: make([]byte, 32)}), 0o600)
		}
		os.Chmod(p, 0o644)
		var perm *keys.PermissionError
		if _, err := LocalKey(home); !errors.As(err, &perm) {
			t.Fatalf("legacy=%v: key of mode 0644 loaded: %v", legacy, err)
		}
		r, _ := Create(home, "humaneval")
		if err := r.Finish(r.NewRecord("test"), 0); err == nil {
			t.Fatalf("legacy=%v: a run was signed with a key of mode 0644", legacy)
		}
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// exportedBundle exports a finished run and returns the bundle path and a
// trust file path for a machine that never saw the run.
func exportedBundle(t *testing.T) (bundle, trustPath string) {
	t.Helper()
	home, r := finishedRun(t)
	bundle = filepath.Join(t.TempDir(), "run.tar")
	if _, err := Export(home, r.ID, bundle); err != nil {
		t.Fatal(err)
	}
	trustPath = filepath.Join(t.TempDir(), "trust.json")
	tf := &trust.File{Version: trust.Version, Keys: []trust.Key{trust.NewKey("lab", mustLocal(t, home).PublicKey(), []trust.Purpose{trust.RunRecords}, nil, nil)}}
	if err := WriteTrust(trustPath, tf); err != nil {
		t.Fatal(err)
	}
	return bundle, trustPath
}

type tarEntry struct {
	h    tar.Header
	data []byte
}

func readTar(t *testing.T, p string) []tarEntry {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []tarEntry
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out = append(out, tarEntry{*h, b})
	}
}

// writeTar writes entries as a bundle: regular files in repro's tar form
// (internal/tarball), other entries as raw header blocks of their type.
func writeTar(t *testing.T, p string, entries []tarEntry) {
	t.Helper()
	var buf []byte
	for _, e := range entries {
		if e.h.Typeflag == tar.TypeReg {
			buf = append(buf, tarballtest.Entry(e.h.Name, e.data)...)
		} else {
			buf = append(buf, tarballtest.Block(e.h.Name, e.h.Typeflag, 0)...)
		}
	}
	buf = append(buf, tarballtest.End()...)
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestBundleVerifiesElsewhere(t *testing.T) {
	bundle, trustPath := exportedBundle(t)
	var names []string
	for _, e := range readTar(t, bundle) {
		names = append(names, e.h.Name)
	}
	want := []string{"run/record.json", "run/record.dsse.json", "run/" + ProvenanceFile, "run/results.json", "run/" + TestResultFile, "run/workspace/samples.jsonl", "signer.pub"}
	if !slices.Equal(names, want) {
		t.Fatalf("bundle entries %q, want %q", names, want)
	}
	tf, err := trust.Load(trustPath)
	if err != nil {
		t.Fatal(err)
	}
	v, err := VerifyBundle(bundle, tf)
	if err != nil || v.Key.Name != "lab" || len(v.Record.Files) != 4 || len(v.Attestations) != 2 {
		t.Fatalf("bundle: %+v %v", v, err)
	}
}

func TestExportRefusesATamperedRun(t *testing.T) {
	home, r := finishedRun(t)
	os.WriteFile(filepath.Join(r.Dir, "results.json"), []byte("{}"), 0o644)
	out := filepath.Join(t.TempDir(), "run.tar")
	if _, err := Export(home, r.ID, out); exitcode.Of(err) != exitcode.Integrity {
		t.Fatalf("export of a tampered run: %v", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a bundle was written for a tampered run")
	}
}

// TestTamperedBundlesAreRefused makes one change to an exported bundle at a
// time and checks that verifying it exits 4 naming the change.
func TestTamperedBundlesAreRefused(t *testing.T) {
	edit := func(name string, f func([]byte) []byte) func([]tarEntry) []tarEntry {
		return func(es []tarEntry) []tarEntry {
			for i := range es {
				if es[i].h.Name == name {
					es[i].data = f(es[i].data)
				}
			}
			return es
		}
	}
	reg := func(name string, data string) tarEntry {
		return tarEntry{tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644}, []byte(data)}
	}
	other, _ := keys.Generate()
	for _, tc := range []struct {
		name, want string
		tamper     func([]tarEntry) []tarEntry
	}{
		{"an output byte", "results.json: content changed", edit("run/results.json", func(b []byte) []byte { b[1] ^= 1; return b })},
		{"the record", "record.json: differs from the signed statement", edit("run/record.json", func(b []byte) []byte { return append(b, ' ') })},
		{"the envelope", "record.dsse.json: signature envelope is not valid JSON", edit("run/record.dsse.json", func(b []byte) []byte { return b[1:] })},
		{"a subject removed", "workspace/samples.jsonl: signed file is missing", func(es []tarEntry) []tarEntry {
			return slices.DeleteFunc(es, func(e tarEntry) bool { return e.h.Name == "run/workspace/samples.jsonl" })
		}},
		{"an extra file in the run", "run/extra.txt: file not in the signed record (refused before reading it)", func(es []tarEntry) []tarEntry { return append(es, reg("run/extra.txt", "x")) }},
		{"an extra file beside the run", "entry \"README\" is not part of an evidence bundle (extra file)", func(es []tarEntry) []tarEntry { return append(es, reg("README", "x")) }},
		{"a duplicate entry", "\"run/results.json\" appears twice", func(es []tarEntry) []tarEntry { return append(es, reg("run/results.json", "{}")) }},
		{"a path out of the bundle", "\"run/../../etc/passwd\" is not a clean relative path", func(es []tarEntry) []tarEntry {
			return append(es, reg("run/../../etc/passwd", "x"))
		}},
		{"an absolute path", "\"/run/x\" is not a clean relative path", func(es []tarEntry) []tarEntry { return append(es, reg("/run/x", "x")) }},
		{"a symbolic link", "tar type '2' (symbolic link)", func(es []tarEntry) []tarEntry {
			return append(es, tarEntry{tar.Header{Typeflag: tar.TypeSymlink, Name: "run/link", Linkname: "/etc/shadow"}, nil})
		}},
		{"a hard link", "tar type '1' (hard link)", func(es []tarEntry) []tarEntry {
			return append(es, tarEntry{tar.Header{Typeflag: tar.TypeLink, Name: "run/hard", Linkname: "run/results.json"}, nil})
		}},
		{"another signer.pub", "signer.pub: is key " + keys.ID(other.PublicKey()), edit("signer.pub", func([]byte) []byte { return keys.MarshalPublic(other.PublicKey()) })},
		{"an SBOM the record does not name", "image/sbom.cdx.json: sha256", func(es []tarEntry) []tarEntry { return append(es, reg("image/sbom.cdx.json", "{}")) }},
		{"no record", "entry \"run/record.dsse.json\" comes where run/record.json must", func(es []tarEntry) []tarEntry {
			return slices.DeleteFunc(es, func(e tarEntry) bool { return e.h.Name == "run/record.json" })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bundle, trustPath := exportedBundle(t)
			writeTar(t, bundle, tc.tamper(readTar(t, bundle)))
			tf, err := trust.Load(trustPath)
			if err != nil {
				t.Fatal(err)
			}
			_, err = VerifyBundle(bundle, tf)
			if exitcode.Of(err) != exitcode.Integrity {
				t.Fatalf("not refused with exit 4: %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not name the change (%q):\n%v", tc.want, err)
			}
		})
	}
}

func TestBundleWithAnUntrustedSigner(t *testing.T) {
	bundle, _ := exportedBundle(t)
	other, _ := keys.Generate()
	tf := &trust.File{Version: trust.Version, Keys: []trust.Key{trust.NewKey("other", other.PublicKey(), []trust.Purpose{trust.RunRecords}, nil, nil)}}
	if _, err := VerifyBundle(bundle, tf); exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "not signed by a trusted key") {
		t.Fatalf("bundle signed by a key not in the trust file: %v", err)
	}
}

func FuzzReadBundle(f *testing.F) {
	var buf bytes.Buffer
	tw := tarball.NewWriter(&buf)
	for _, e := range []struct{ name, data string }{{"run/record.json", "{}"}, {"run/record.dsse.json", "{}"}, {"run/a/b.txt", "x"}, {"signer.pub", "k"}} {
		tw.AddBytes(e.name, time.Unix(tarballtest.Mtime, 0), []byte(e.data))
	}
	tw.Close()
	f.Add(buf.Bytes())
	// A real bundle, signed by the key the target trusts.
	home := f.TempDir()
	r, err := Create(home, "humaneval")
	if err != nil {
		f.Fatal(err)
	}
	os.WriteFile(filepath.Join(r.Dir, "results.json"), []byte(`{"pass":1}`), 0o644)
	if err := r.Finish(r.NewRecord("test"), 0); err != nil {
		f.Fatal(err)
	}
	bundle := filepath.Join(f.TempDir(), "run.tar")
	if _, err := Export(home, r.ID, bundle); err != nil {
		f.Fatal(err)
	}
	real, err := os.ReadFile(bundle)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real)
	k, err := LocalKey(home)
	if err != nil {
		f.Fatal(err)
	}
	tf := &trust.File{Version: trust.Version, Keys: []trust.Key{trust.NewKey("lab", k.PublicKey(), []trust.Purpose{trust.RunRecords}, nil, nil)}}
	f.Fuzz(func(t *testing.T, b []byte) {
		bd, err := ReadBundle(bytes.NewReader(b), tf)
		if err != nil {
			return
		}
		if bd.Record == nil || bd.Envelope == nil {
			t.Fatal("bundle without a record or an envelope accepted")
		}
		if bd.Unread != nil {
			if len(bd.Files) > 0 || bd.SignerPub != nil || bd.SBOM != nil || bd.Scan != nil {
				t.Fatalf("entries read after a record that does not verify (%v)", bd.Unread)
			}
			return
		}
		rec, err := DecodeRecord(bd.Record)
		if err != nil {
			t.Fatalf("a record that verified does not decode: %v", err)
		}
		sizes := map[string]int64{}
		for _, f := range rec.Files {
			sizes[f.Path] = f.Size
		}
		for p, f := range bd.Files {
			if tarball.CheckName(p) != nil || p == recordFile || p == envelopeFile {
				t.Fatalf("file %q accepted", p)
			}
			if s, ok := sizes[p]; !ok || s != f.Size {
				t.Fatalf("file %q of %d bytes read, the signed record says %d (named: %v)", p, f.Size, s, ok)
			}
		}
	})
}

// TestConcurrentFirstUseAgreesOnOneKey starts several first signings in a
// fresh home at once: they must end with one key, trusted, and every run
// must verify.
func TestConcurrentFirstUseAgreesOnOneKey(t *testing.T) {
	home := t.TempDir()
	const n = 8
	errs := make(chan error, n)
	rs := make(chan *Run, n)
	for range n {
		go func() {
			r, err := Create(home, "humaneval")
			if err == nil {
				err = r.Finish(r.NewRecord("test"), 0)
			}
			rs <- r
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		r := <-rs
		if _, _, err := r.Verify(); err != nil {
			t.Fatalf("run %s: %v", r.ID, err)
		}
	}
	tf, err := LoadTrust(home, "")
	if err != nil || len(tf.Keys) != 1 {
		t.Fatalf("trust file: %+v %v", tf, err)
	}
	ents, _ := os.ReadDir(layout.Home(home).Keys())
	if len(ents) != 2 {
		t.Fatalf("keys folder holds %d files, want the key pair", len(ents))
	}
}

// TestBundleCarriesImageEvidence: a run that used the evaluator image is
// exported with the image's SBOM and signed scan attestation, which the
// bundle check ties to the record's image; another image's scan is refused.
func TestBundleCarriesImageEvidence(t *testing.T) {
	home := t.TempDir()
	imageID := "sha256:" + strings.Repeat("1", 64)
	sbom := []byte(`{"bomFormat":"CycloneDX"}`)
	os.MkdirAll(filepath.Dir(layout.Home(home).ImageSBOM()), 0o700)
	os.WriteFile(layout.Home(home).ImageSBOM(), sbom, 0o644)
	scan := func(id string) []byte {
		payload := []byte(`{"_type":"https://in-toto.io/Statement/v1","predicate":{"image_id":"` + id + `","scanned_at":"` + time.Now().UTC().Format(time.RFC3339) + `"}}`)
		eb, err := SignEnvelope(home, PayloadType, payload)
		if err != nil {
			t.Fatal(err)
		}
		return eb
	}
	os.WriteFile(layout.Home(home).ImageScan(), scan(imageID), 0o644)
	r, err := Create(home, "humaneval")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(r.Dir, "eval_results.json"), []byte("{}"), 0o644)
	rec := r.NewRecord("test")
	rec.Image = map[string]string{"id": imageID, "sbom_digest": digest.Of(sbom).String()}
	if err := r.Finish(rec, 0); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(t.TempDir(), "run.tar")
	if _, err := Export(home, r.ID, bundle); err != nil {
		t.Fatal(err)
	}
	es := readTar(t, bundle)
	var names []string
	for _, e := range es {
		names = append(names, e.h.Name)
	}
	if !slices.Contains(names, bundleSBOM) || !slices.Contains(names, bundleScan) {
		t.Fatalf("bundle entries %q lack the image evidence", names)
	}
	tf, err := LoadTrust(home, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyBundle(bundle, tf); err != nil {
		t.Fatal(err)
	}
	other := scan("sha256:" + strings.Repeat("2", 64))
	for i := range es {
		if es[i].h.Name == bundleScan {
			es[i].data = other
		}
	}
	writeTar(t, bundle, es)
	if _, err := VerifyBundle(bundle, tf); exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "image/scan.dsse.json: is a scan of image") {
		t.Fatalf("another image's scan: %v", err)
	}
}
