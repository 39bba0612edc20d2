package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/safefile"
)

// maxSampleSize bounds one sample file copied into a workspace.
const maxSampleSize = 64 << 20

// Workspace is a fresh folder holding read-only copies of the samples of a
// run. Its manifest (name, mode, size, digest of every file) is taken when
// it is made; Check takes it again and reports any difference.
type Workspace struct {
	dir   string
	files []fileState // sorted by name
}

type fileState struct {
	name   string
	mode   os.FileMode
	size   int64
	nlink  uint64
	ino    uint64
	digest digest.SHA256
}

// NewWorkspace copies each sample into dir, which must not exist yet or be
// an empty folder, under its base name (base names must be unique), mode
// 0444, and hashes them. Sample paths are untrusted: each must be a regular
// file (links are not followed) of at most 64 MiB.
func NewWorkspace(dir string, samples []string) (*Workspace, error) {
	names := make([]string, len(samples))
	for i, src := range samples {
		names[i] = filepath.Base(src)
	}
	return makeWorkspace(dir, names, samples, func(i int, dst string) error {
		return copySample(samples[i], dst)
	})
}

// WorkspaceFile is one file of WriteWorkspace: its name in the workspace,
// its bytes, and where they came from, which errors name.
type WorkspaceFile struct {
	Name   string
	Data   io.Reader
	Origin string
}

// WriteWorkspace is NewWorkspace for samples this process has already
// read (from memory, or a copy it keeps): each
// file's Data is written into dir under its Name (names must be unique and
// usable, files at most 64 MiB), mode 0444, synced, and hashed as
// NewWorkspace hashes its copies. No other file is read.
func WriteWorkspace(dir string, files []WorkspaceFile) (*Workspace, error) {
	names, origins := make([]string, len(files)), make([]string, len(files))
	for i, f := range files {
		names[i], origins[i] = f.Name, f.Origin
	}
	return makeWorkspace(dir, names, origins, func(i int, dst string) error {
		n, err := writeSample(dst, io.LimitReader(files[i].Data, maxSampleSize+1), files[i].Origin)
		if err == nil && n > maxSampleSize {
			err = fmt.Errorf("sample %s: more than the %d bytes allowed", files[i].Origin, int64(maxSampleSize))
		}
		return err
	})
}

// makeWorkspace makes dir a workspace of one file for each of names (its
// origin, which errors name, at the same index): each name is checked
// (usable, unique) before put(i, dst) writes the file at dst; the folder
// is then made read-only and scanned.
func makeWorkspace(dir string, names, origins []string, put func(i int, dst string) error) (*Workspace, error) {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("failed to create workspace: %w", err)
	}
	if ents, err := os.ReadDir(dir); err != nil {
		return nil, fmt.Errorf("failed to read workspace: %w", err)
	} else if len(ents) > 0 {
		return nil, fmt.Errorf("workspace %s is not empty", dir)
	}
	seen := make(map[string]bool)
	for i, name := range names {
		origin := origins[i]
		if !validName(name) {
			return nil, fmt.Errorf("sample %s: unusable file name", origin)
		}
		if seen[name] {
			return nil, fmt.Errorf("sample %s: another sample has the same name %s", origin, name)
		}
		seen[name] = true
		if err := put(i, filepath.Join(dir, name)); err != nil {
			return nil, err
		}
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		return nil, err
	}
	files, err := scan(dir)
	if err != nil {
		return nil, err
	}
	return &Workspace{dir: dir, files: files}, nil
}

// writeSample writes what r holds as a new file dst, mode 0444, and syncs
// it; it returns the bytes written.
func writeSample(dst string, r io.Reader, origin string) (int64, error) {
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o444)
	if err != nil {
		return 0, fmt.Errorf("failed to copy sample %s: %w", origin, err)
	}
	n, err := io.Copy(out, r)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("failed to copy sample %s: %w", origin, err)
	}
	return n, nil
}

func validName(n string) bool {
	return n != "" && n != "." && n != ".." && n != "/" && !strings.ContainsAny(n, "/\x00:,") && len(n) <= 255
}

func copySample(src, dst string) error {
	in, err := safefile.OpenRegular(src)
	if err != nil {
		return fmt.Errorf("sample %s: %w", src, err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return fmt.Errorf("sample %s: %w", src, err)
	}
	if fi.Size() > maxSampleSize {
		return fmt.Errorf("sample %s: %d bytes, more than the %d allowed", src, fi.Size(), maxSampleSize)
	}
	n, err := writeSample(dst, io.LimitReader(in, maxSampleSize+1), src)
	if err == nil && n > maxSampleSize {
		err = fmt.Errorf("failed to copy sample %s: grew past %d bytes while copied", src, maxSampleSize)
	}
	return err
}

// scan records the state of every entry of dir, without following links.
func scan(dir string) ([]fileState, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("failed to read workspace: %w", err)
	}
	out := make([]fileState, 0, len(ents))
	for _, de := range ents {
		p := filepath.Join(dir, de.Name())
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		st := fileState{name: de.Name(), mode: fi.Mode(), size: fi.Size()}
		if s, ok := fi.Sys().(*syscall.Stat_t); ok {
			st.nlink, st.ino = uint64(s.Nlink), s.Ino
		}
		if fi.Mode().IsRegular() {
			f, err := safefile.OpenRegular(p)
			if err != nil {
				return nil, err
			}
			h := digest.NewHash()
			_, err = io.Copy(h, io.LimitReader(f, maxSampleSize+1))
			f.Close()
			if err != nil {
				return nil, err
			}
			st.digest = h.Digest()
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// Dir returns the workspace folder on the host.
func (w *Workspace) Dir() string { return w.dir }

// Files returns the names of the samples, sorted.
func (w *Workspace) Files() []string {
	names := make([]string, len(w.files))
	for i, f := range w.files {
		names[i] = f.name
	}
	return names
}

// Mounts binds each sample read-only on its own at target/<name>, so that
// a program can neither change, rename, replace nor remove one.
func (w *Workspace) Mounts(target string) []Mount {
	ms := make([]Mount, len(w.files))
	for i, f := range w.files {
		ms[i] = Mount{Source: filepath.Join(w.dir, f.name), Target: path.Join(target, f.name)}
	}
	return ms
}

// Digest returns a digest of the manifest taken when the workspace was
// made: every name, mode, size and content digest, in name order.
func (w *Workspace) Digest() digest.SHA256 {
	h := digest.NewHash()
	for _, f := range w.files {
		fmt.Fprintf(h, "%s\x00%o\x00%d\x00%s\n", f.name, uint32(f.mode), f.size, f.digest.Hex())
	}
	return h.Digest()
}

// Check takes the manifest again and returns an exitcode.Integrity error
// naming every difference: a changed content, mode or size, a renamed,
// linked, extra or missing entry.
func (w *Workspace) Check() error {
	fi, err := os.Lstat(w.dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o555 {
		return exitcode.Errorf(exitcode.Integrity, "workspace %s was changed: the folder itself was replaced or its mode changed", w.dir)
	}
	now, err := scan(w.dir)
	if err != nil {
		return exitcode.Errorf(exitcode.Integrity, "workspace %s could not be checked: %v", w.dir, err)
	}
	var diffs []string
	before := make(map[string]fileState, len(w.files))
	for _, f := range w.files {
		before[f.name] = f
	}
	for _, n := range now {
		b, ok := before[n.name]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("%s: extra entry (%s)", n.name, n.mode.Type()))
			continue
		}
		delete(before, n.name)
		switch {
		case n.mode.Type() != b.mode.Type():
			diffs = append(diffs, fmt.Sprintf("%s: type changed from %v to %v", n.name, b.mode.Type(), n.mode.Type()))
		case n.mode != b.mode:
			diffs = append(diffs, fmt.Sprintf("%s: mode changed from %v to %v", n.name, b.mode, n.mode))
		}
		if n.nlink != b.nlink {
			diffs = append(diffs, fmt.Sprintf("%s: link count changed from %d to %d", n.name, b.nlink, n.nlink))
		}
		if n.ino != b.ino {
			diffs = append(diffs, fmt.Sprintf("%s: replaced by another file", n.name))
		}
		if n.size != b.size || n.digest != b.digest {
			diffs = append(diffs, fmt.Sprintf("%s: content changed", n.name))
		}
	}
	missing := make([]string, 0, len(before))
	for name := range before {
		missing = append(missing, name)
	}
	sort.Strings(missing)
	for _, name := range missing {
		diffs = append(diffs, fmt.Sprintf("%s: missing", name))
	}
	if len(diffs) > 0 {
		return exitcode.Errorf(exitcode.Integrity, "samples in %s changed during the run: %s", w.dir, strings.Join(diffs, "; "))
	}
	return nil
}
