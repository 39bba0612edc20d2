package release

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/testenv"
)

// goEnv is the value of a go env variable.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestReleaseIsReproducible runs scripts/release.sh on two clones of the
// checkout's commit, in different folders, with different GOPATHs (each
// with its own module cache, filled offline from this machine's through a
// file:// GOPROXY), different umasks, and, for the second, an empty build
// cache, so that it compiles everything again: the binaries, the SBOM and
// SHA256SUMS are byte-identical. The provenance of each verifies with
// repro and with cosign (offline); a binary changed by one byte fails
// both.
func TestReleaseIsReproducible(t *testing.T) {
	root := testenv.RepoRoot(t)
	cosign := testenv.Cosign(t)
	for _, tool := range []string{"git", "openssl", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, tool, "scripts/deps.sh installs it")
		}
	}
	k, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(t.TempDir(), "release.key")
	if err := keys.WritePrivate(keyPath, k); err != nil {
		t.Fatal(err)
	}
	pubPath := keyPath + ".pub"
	os.WriteFile(pubPath, keys.MarshalPublic(k.PublicKey()), 0o644)
	out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(string(out))
	proxy := "file://" + filepath.Join(goEnv(t, "GOMODCACHE"), "cache", "download")
	hostCache := goEnv(t, "GOCACHE")

	release := func(name, umask, gocache string) string {
		t.Helper()
		base := filepath.Join(t.TempDir(), name)
		src := filepath.Join(base, "src", "repro")
		if out, err := exec.Command("git", "clone", "-q", "--no-hardlinks", root, src).CombinedOutput(); err != nil {
			t.Fatalf("git clone: %v\n%s", err, out)
		}
		if out, err := exec.Command("git", "-C", src, "checkout", "-q", head).CombinedOutput(); err != nil {
			t.Fatalf("git checkout: %v\n%s", err, out)
		}
		gopath := filepath.Join(base, "gopath")
		cmd := exec.Command("bash", "-c", "umask "+umask+" && exec bash scripts/release.sh v0.0.0-repro-test")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "REPRO_RELEASE_KEY="+keyPath, "COSIGN="+cosign, "GOPATH="+gopath, "GOMODCACHE="+filepath.Join(gopath, "pkg", "mod"),
			"GOPROXY="+proxy, "GOSUMDB=off", "GOCACHE="+gocache)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "cosign verify-blob-attestation: the provenance of both binaries verifies") {
			t.Fatalf("release.sh in %s: %v\n%s", src, err, out)
		}
		return filepath.Join(src, "dist", "v0.0.0-repro-test")
	}
	a := release("a", "022", hostCache)
	b := release("b", "077", filepath.Join(t.TempDir(), "empty-gocache"))
	for _, f := range []string{BinaryName(Platforms[0]), BinaryName(Platforms[1]), SBOMFile, SumsFile} {
		ba, err1 := os.ReadFile(filepath.Join(a, f))
		bb, err2 := os.ReadFile(filepath.Join(b, f))
		if err1 != nil || err2 != nil || !bytes.Equal(ba, bb) {
			t.Errorf("%s differs between the two builds (%v %v; %d and %d bytes)", f, err1, err2, len(ba), len(bb))
		}
	}
	pub := keys.MarshalPublic(k.PublicKey())
	v, err := Verify(b, pub)
	if err != nil {
		t.Fatal(err)
	}
	if v.Commit != head || v.Version != "v0.0.0-repro-test" {
		t.Fatalf("verified %+v, HEAD %s", v, head)
	}
	bin := filepath.Join(b, BinaryName("linux/amd64"))
	if out, err := exec.Command(bin, "version", "--json").Output(); err != nil || !strings.Contains(string(out), `"commit": "`+v.Commit+`"`) || !strings.Contains(string(out), `"version": "v0.0.0-repro-test"`) {
		t.Fatalf("the release binary's version --json: %v\n%s", err, out)
	}
	cosignVerify := func(blob string) error {
		argv := testenv.Offline(t, cosign, "verify-blob-attestation", "--key", pubPath, "--insecure-ignore-tlog", "--type", "slsaprovenance1",
			"--bundle", filepath.Join(b, ProvenanceFile), blob)
		return exec.Command(argv[0], argv[1:]...).Run()
	}
	if err := cosignVerify(filepath.Join(b, BinaryName("linux/arm64"))); err != nil {
		t.Fatalf("cosign: %v", err)
	}
	raw, _ := os.ReadFile(bin)
	raw[len(raw)/2] ^= 1
	os.WriteFile(bin, raw, 0o755)
	if _, err := Verify(b, pub); err == nil {
		t.Fatal("repro verified a changed binary")
	}
	if err := cosignVerify(bin); err == nil {
		t.Fatal("cosign verified a changed binary")
	}
}
