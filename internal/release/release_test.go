package release

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/sigbundle"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

const testCommit = "0123456789abcdef0123456789abcdef01234567"

var stamped struct {
	sync.Once
	dir string
	err error
}

// smallBinaries builds, once per test process, the buildinfo tests' tiny
// program for every release platform as scripts/release.sh builds repro,
// and copies them into a new folder.
func smallBinaries(t *testing.T) string {
	t.Helper()
	stamped.Do(func() {
		stamped.dir, stamped.err = os.MkdirTemp("", "repro-release-test-")
		for _, p := range Platforms {
			if stamped.err != nil {
				return
			}
			goos, goarch, _ := strings.Cut(p, "/")
			cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-X main.Version=v0.0.1 -X main.Commit="+testCommit, "-o", filepath.Join(stamped.dir, BinaryName(p)), "../buildinfo/testdata/stamped")
			cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				stamped.err = err
				t.Logf("go build: %s", out)
			}
		}
	})
	if stamped.err != nil {
		t.Fatal(stamped.err)
	}
	dir := t.TempDir()
	for _, p := range Platforms {
		b, err := os.ReadFile(filepath.Join(stamped.dir, BinaryName(p)))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, BinaryName(p)), b, 0o755)
	}
	return dir
}

// attested is a release folder of the small binaries, attested with a new
// key, with SHA256SUMS as the script writes it.
func attested(t *testing.T) (dir string, k *keys.Signer) {
	t.Helper()
	dir = smallBinaries(t)
	k, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := Attest(dir, k, Options{Version: "v0.0.1", Commit: testCommit, StartedOn: now, FinishedOn: now}); err != nil {
		t.Fatal(err)
	}
	writeSums(t, dir)
	return dir, k
}

func writeSums(t *testing.T, dir string) {
	t.Helper()
	var sums strings.Builder
	for _, n := range []string{BinaryName(Platforms[0]), BinaryName(Platforms[1]), SBOMFile} {
		d, _, err := digest.File(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		sums.WriteString(d.Hex() + "  " + n + "\n")
	}
	os.WriteFile(filepath.Join(dir, SumsFile), []byte(sums.String()), 0o644)
}

func TestAttestAndVerify(t *testing.T) {
	dir, k := attested(t)
	v, err := Verify(dir, keys.MarshalPublic(k.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	if v.Version != "v0.0.1" || v.Commit != testCommit || v.Source != DefaultSource || len(v.Binaries) != 2 || v.Modules != 1 || !strings.HasPrefix(v.Go, "go1.") {
		t.Fatalf("verified %+v", v)
	}
	if err := Attest(dir, k, Options{Version: "v0.0.1", Commit: "abc"}); exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("a short commit: %v", err)
	}
}

// resign rewrites the release's provenance payload with edit and signs it
// with signer as a bundle naming hint.
func resign(t *testing.T, dir string, signer *keys.Signer, hint string, edit func([]byte) []byte) {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, ProvenanceFile))
	env, _, err := sigbundle.Unwrap(b)
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := env.DecodeB64Payload()
	s, _ := dsse.NewEnvelopeSigner(signer)
	ne, err := s.SignPayload(context.Background(), PayloadType, edit(payload))
	if err != nil {
		t.Fatal(err)
	}
	nb, _ := sigbundle.Wrap(ne, hint)
	os.WriteFile(filepath.Join(dir, ProvenanceFile), nb, 0o644)
}

// TestVerifyRefuses changes one thing of an attested release at a time.
func TestVerifyRefuses(t *testing.T) {
	other, _ := keys.Generate()
	amd64, arm64 := BinaryName(Platforms[0]), BinaryName(Platforms[1])
	for _, tc := range []struct {
		name, want string
		tamper     func(t *testing.T, dir string, k *keys.Signer)
	}{
		{"a byte of a binary", arm64 + " has sha256", func(t *testing.T, dir string, _ *keys.Signer) {
			p := filepath.Join(dir, arm64)
			b, _ := os.ReadFile(p)
			b[len(b)/2] ^= 1
			os.WriteFile(p, b, 0o755)
		}},
		{"the binaries swapped", amd64 + " has sha256", func(t *testing.T, dir string, _ *keys.Signer) {
			a, _ := os.ReadFile(filepath.Join(dir, amd64))
			b, _ := os.ReadFile(filepath.Join(dir, arm64))
			os.WriteFile(filepath.Join(dir, amd64), b, 0o755)
			os.WriteFile(filepath.Join(dir, arm64), a, 0o755)
		}},
		{"a binary missing", arm64, func(t *testing.T, dir string, _ *keys.Signer) { os.Remove(filepath.Join(dir, arm64)) }},
		{"the SBOM changed", SBOMFile + " has sha256", func(t *testing.T, dir string, _ *keys.Signer) {
			p := filepath.Join(dir, SBOMFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte("golang.org/x/mod"), []byte("golang.org/x/moe"), 1), 0o644)
		}},
		{"SHA256SUMS wrong", SumsFile + " does not list", func(t *testing.T, dir string, _ *keys.Signer) {
			p := filepath.Join(dir, SumsFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte("  "+SBOMFile), []byte("  other.json"), 1), 0o644)
		}},
		{"SHA256SUMS with an extra file", `SHA256SUMS does not list the release's files with their digests: "extra.bin" is listed but is not a file of the release`, func(t *testing.T, dir string, _ *keys.Signer) {
			f, _ := os.OpenFile(filepath.Join(dir, SumsFile), os.O_APPEND|os.O_WRONLY, 0)
			fmt.Fprintf(f, "%064x  extra.bin\n", 1)
			f.Close()
		}},
		{"SHA256SUMS with another digest", SBOMFile + " is listed with sha256", func(t *testing.T, dir string, _ *keys.Signer) {
			p := filepath.Join(dir, SumsFile)
			b, _ := os.ReadFile(p)
			i := bytes.Index(b, []byte("  "+SBOMFile)) - 1
			if b[i] == '0' {
				b[i] = '1'
			} else {
				b[i] = '0'
			}
			os.WriteFile(p, b, 0o644)
		}},
		{"SHA256SUMS naming a binary twice", "lists \"" + amd64 + "\" twice", func(t *testing.T, dir string, _ *keys.Signer) {
			f, _ := os.OpenFile(filepath.Join(dir, SumsFile), os.O_APPEND|os.O_WRONLY, 0)
			fmt.Fprintf(f, "%064x  %s\n", 1, amd64)
			f.Close()
		}},
		{"a byte of the provenance", ProvenanceFile, func(t *testing.T, dir string, _ *keys.Signer) {
			p := filepath.Join(dir, ProvenanceFile)
			b, _ := os.ReadFile(p)
			i := bytes.Index(b, []byte(`"payload": "`)) + 40
			b[i] ^= 1
			os.WriteFile(p, b, 0o644)
		}},
		{"signed by another key", "does not verify with the release key", func(t *testing.T, dir string, _ *keys.Signer) {
			resign(t, dir, other, keys.ID(other.PublicKey()), func(p []byte) []byte { return p })
		}},
		{"a bundle naming another key", "the bundle names key", func(t *testing.T, dir string, k *keys.Signer) {
			resign(t, dir, k, keys.ID(other.PublicKey()), func(p []byte) []byte { return p })
		}},
		{"another commit claimed, re-signed", "does not link the modules", func(t *testing.T, dir string, k *keys.Signer) {
			resign(t, dir, k, keys.ID(k.PublicKey()), func(p []byte) []byte { return bytes.ReplaceAll(p, []byte("h1:"), []byte("h1:x")) })
		}},
		{"another build type, re-signed", "build type", func(t *testing.T, dir string, k *keys.Signer) {
			resign(t, dir, k, keys.ID(k.PublicKey()), func(p []byte) []byte { return bytes.Replace(p, []byte(BuildType), []byte(BuildType+"x"), 1) })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, k := attested(t)
			tc.tamper(t, dir, k)
			_, err := Verify(dir, keys.MarshalPublic(k.PublicKey()))
			if exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want exit 4 naming %q", err, tc.want)
			}
		})
	}
}

// TestAttestRefusesMixedBinaries: binaries of other platforms than their
// names say, or linking other modules, are not attested.
func TestAttestRefusesMixedBinaries(t *testing.T) {
	dir := smallBinaries(t)
	k, _ := keys.Generate()
	b, _ := os.ReadFile(filepath.Join(dir, BinaryName(Platforms[0])))
	os.WriteFile(filepath.Join(dir, BinaryName(Platforms[1])), b, 0o755)
	if err := Attest(dir, k, Options{Version: "v0.0.1", Commit: testCommit}); exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "is a binary for \"linux/amd64\"") {
		t.Fatalf("an amd64 binary named arm64: %v", err)
	}
}
