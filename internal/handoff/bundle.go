package handoff

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/reprolab/repro/internal/safefile"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"golang.org/x/sys/unix"
)

// maxBundleFile bounds a rendered file read back from a bundle.
const maxBundleFile = 4 << 20

// Seal fixes the manifest's file list and digest and renders the bundle's
// files. After it, m is final.
func Seal(m *Manifest) (map[string][]byte, error) {
	m.Files = bundleFiles(m.Target)
	if err := m.Seal(); err != nil {
		return nil, err
	}
	files, err := Render(m)
	if err != nil {
		return nil, err
	}
	b, err := m.Marshal()
	if err != nil {
		return nil, err
	}
	files[ManifestName] = b
	return files, nil
}

// WriteBundle seals m and writes the bundle into dir, with the evidence
// files the manifest's image verification lists, which must not
// exist or be an empty folder. The files are written into a temporary
// sibling folder, each with atomicfile, and the folder is renamed into
// place, so dir holds either the whole bundle or nothing.
func WriteBundle(dir string, m *Manifest, evidence map[string][]byte) error {
	if fi, err := os.Lstat(dir); err == nil {
		if !fi.IsDir() {
			return exitcode.Errorf(exitcode.Usage, "--out %s exists and is not a folder", dir)
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return exitcode.Errorf(exitcode.Usage, "--out %s: %v", dir, errText(err))
		}
		if len(ents) > 0 {
			return exitcode.Errorf(exitcode.Usage, "--out %s is not empty: give a new or empty folder, so that no old bundle file survives", dir)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return exitcode.Errorf(exitcode.Usage, "--out %s: %v", dir, errText(err))
	}
	files, err := Seal(m)
	if err != nil {
		return err
	}
	if v := m.ImageVerification; v != nil {
		for _, e := range v.Evidence {
			b, ok := evidence[e.File]
			if !ok || digest.Of(b).Hex() != e.SHA256 {
				return fmt.Errorf("write bundle: the evidence %s is not the envelope the manifest records", e.File)
			}
			files[e.File] = b
		}
	}
	parent := filepath.Dir(filepath.Clean(dir))
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return exitcode.Errorf(exitcode.Precondition, "cannot create the bundle next to %s: %v", dir, errText(err))
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(tmp, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := atomicfile.WriteFile(p, files[n], os.FileMode(fileMode(n))); err != nil {
			return err
		}
	}
	for _, d := range []string{filepath.Join(tmp, "slurm"), filepath.Join(tmp, "kubernetes"), filepath.Join(tmp, "image")} {
		if _, err := os.Stat(d); err == nil {
			if err := atomicfile.SyncDir(d); err != nil {
				return err
			}
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	// rename(2) replaces an empty folder; os.Rename refuses any folder.
	if err := unix.Rename(tmp, dir); err != nil {
		return exitcode.Errorf(exitcode.Precondition, "cannot move the bundle into %s: %v", dir, errText(err))
	}
	ok = true
	return atomicfile.SyncDir(parent)
}

// VerifyBundle reads dir's manifest, checks its digest, renders the
// bundle's files again and compares them with the files in dir. Any
// difference is an exitcode.Integrity error naming the file; files the
// manifest does not list (job output, say) are ignored.
func VerifyBundle(dir string) (*Manifest, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	want, err := Render(m)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %s: cannot render its files from the manifest: %v", dir, err)
	}
	listed := map[string]bool{}
	for _, n := range m.Files {
		listed[n] = true
		if n == ManifestName {
			continue
		}
		w, ok := want[n]
		if !ok {
			return nil, exitcode.Errorf(exitcode.Integrity, "bundle %s: the manifest lists %s, which repro does not write for target %s", dir, n, m.Target)
		}
		got, err := safefile.ReadFile(filepath.Join(dir, filepath.FromSlash(n)), maxBundleFile)
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Integrity, "bundle %s: %s: %v", dir, n, errText(err))
		}
		if !bytes.Equal(got, w) {
			return nil, exitcode.Errorf(exitcode.Integrity, "bundle %s: %s differs from what its manifest renders: it was changed after repro handoff wrote it", dir, n)
		}
	}
	for n := range want {
		if !listed[n] {
			return nil, exitcode.Errorf(exitcode.Integrity, "bundle %s: the manifest does not list %s", dir, n)
		}
	}
	if _, err := checkEvidence(dir, m); err != nil {
		return nil, err
	}
	return m, nil
}

// Summary is a one-line description of a manifest.
func (m *Manifest) Summary() string {
	state := "ready"
	if !m.Ready {
		state = fmt.Sprintf("plan, not ready (%d problems)", len(m.Missing))
	}
	return fmt.Sprintf("%s bundle for %s, manifest sha256:%s, %d pins, %d runs, %s", m.Workload, m.Target, m.Digest, len(m.Pins), len(m.Runs), state)
}

// Handoff checks the requirements (Prepare) and writes the bundle into
// out only when every requirement holds, or, with plan set, in any case,
// marked not ready. When a requirement does not hold and plan is unset it
// writes nothing and returns the plan with plan.Err().
func Handoff(ctx context.Context, opts Options, out string, plan bool) (*Plan, error) {
	if out == "" {
		return nil, exitcode.Errorf(exitcode.Usage, "no bundle folder given (--out)")
	}
	opts.OutDir = out
	p, err := Prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	if !p.Ready() && !plan {
		return p, p.Err()
	}
	if err := WriteBundle(out, p.Manifest, p.Evidence); err != nil {
		return p, err
	}
	return p, nil
}
