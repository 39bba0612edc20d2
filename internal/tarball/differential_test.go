package tarball_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/tarball"
	tt "github.com/reprolab/repro/internal/tarball/tarballtest"
)

// seedCorpus is the committed seed corpus of FuzzReader.
func seedCorpus(t *testing.T) map[string][]byte {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", "FuzzReader")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitN(strings.TrimSpace(string(b)), "\n", 2)
		if len(lines) != 2 || lines[0] != "go test fuzz v1" || !strings.HasPrefix(lines[1], "[]byte(") {
			t.Fatalf("%s: not a one-value []byte fuzz corpus file", e.Name())
		}
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		out["seed/"+e.Name()] = []byte(s)
	}
	if len(out) < 10 {
		t.Fatalf("the seed corpus %s holds %d files", dir, len(out))
	}
	return out
}

// TestReferenceToolsAgree is the differential test: every archive the
// reader accepts, from the writer, from the seed corpus, and mutated from
// both, unpacks with GNU tar, bsdtar and Python's tarfile to exactly the
// files and bytes the reader read. Accepting any archive a tool reads
// otherwise fails it.
func TestReferenceToolsAgree(t *testing.T) {
	tt.Tools(t)
	corpus := seedCorpus(t)
	corpus["writer/shapes"] = write(t, shapes()...)
	corpus["writer/one"] = write(t, tt.File{Name: "run/record.json", Data: []byte("{}")})
	corpus["writer/empty"] = write(t)
	corpus["writer/padded"] = append(write(t, shapes()[:3]...), make([]byte, tarball.MaxTrailingZeros)...)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, name := range []string{"writer/shapes", "writer/one"} {
		for i, m := range tt.Mutants(rng, corpus[name], 300) {
			corpus[name+"/mutant-"+strconv.Itoa(i)] = m
		}
	}
	dir := t.TempDir()
	accepted := 0
	for name, b := range corpus {
		files, err := read(b, lim)
		if err != nil {
			continue
		}
		accepted++
		want := map[string][]byte{}
		for _, f := range files {
			want[f.Name] = f.Data
		}
		p := filepath.Join(dir, strings.ReplaceAll(name, "/", "_")+".tar")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		tt.Agree(t, p, want)
	}
	if accepted < 50 {
		t.Fatalf("only %d of %d archives accepted: the differential needs more", accepted, len(corpus))
	}
	t.Logf("%d of %d archives accepted, each unpacked alike by GNU tar, bsdtar and Python's tarfile", accepted, len(corpus))
}

// TestHostileArchivesAreReadDifferently is the control of the
// differential: Go's archive/tar (the reader repro used before) reads the
// smuggling archive to other files than GNU tar does, so accepting what
// archive/tar accepts would fail TestReferenceToolsAgree.
func TestHostileArchivesAreReadDifferently(t *testing.T) {
	tools := tt.Tools(t)
	for _, h := range hostiles(t) {
		goFiles, err := tt.ReadGo(h.archive)
		if err != nil {
			continue
		}
		want := map[string][]byte{}
		for _, f := range goFiles {
			want[f.Name] = f.Data
		}
		p := filepath.Join(t.TempDir(), "h.tar")
		if err := os.WriteFile(p, h.archive, 0o644); err != nil {
			t.Fatal(err)
		}
		var differ []string
		for _, tool := range tools {
			got, err := tool.Unpack(t, p)
			if err != nil || tt.Diff(want, got) != "" {
				differ = append(differ, tool.Name)
			}
		}
		t.Logf("%s: archive/tar reads %d files; read otherwise by %v", h.name, len(goFiles), differ)
		if h.name == "GNU.sparse.realsize without a map" && !strings.Contains(strings.Join(differ, ","), "GNU tar") {
			t.Errorf("control: GNU tar reads the smuggling archive as archive/tar does")
		}
	}
}
