package digest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// A source tree is pinned by the SHA-256 of its manifest: a canonical text
// listing every file under the tree root, one line each, sorted by path:
//
//	repro-tree v1
//	<mode> <sha256 hex> <path>
//
// mode is 100644 for a regular file, 100755 for a regular file with any
// execute bit, 120000 for a symbolic link (hashed over its target text).
// Paths are relative, slash-separated, valid UTF-8 without control
// characters; folders are implied by the paths. A .git folder at the tree
// root is left out (Tree; Folder keeps it). Any other kind of file makes
// the tree invalid.

const manifestHeader = "repro-tree v1"

// Manifest limits.
const (
	MaxTreeFiles   = 200000
	MaxPathBytes   = 4096
	maxManifestLen = MaxTreeFiles * (6 + 1 + 64 + 1 + MaxPathBytes + 1)
)

// File modes recorded in a manifest.
const (
	ModeFile    = "100644"
	ModeExec    = "100755"
	ModeSymlink = "120000"
)

// TreeFile is one manifest line.
type TreeFile struct {
	Path   string
	Mode   string
	SHA256 SHA256
}

// Manifest is the sorted file list of a tree.
type Manifest []TreeFile

// Marshal writes the canonical manifest text.
func (m Manifest) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString(manifestHeader + "\n")
	for _, f := range m {
		fmt.Fprintf(&b, "%s %s %s\n", f.Mode, f.SHA256.Hex(), f.Path)
	}
	return b.Bytes()
}

// Digest returns the tree digest: SHA-256 of the canonical manifest.
func (m Manifest) Digest() SHA256 { return sha256.Sum256(m.Marshal()) }

func checkTreePath(p string) error {
	if p == "" || len(p) > MaxPathBytes {
		return fmt.Errorf("path length %d out of range", len(p))
	}
	if !utf8.ValidString(p) {
		return fmt.Errorf("path %q is not valid UTF-8", p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("path %q has a control character", p)
		}
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("path %q is not a clean relative path", p)
		}
	}
	return nil
}

// ParseManifest reads a manifest strictly: header, well-formed lines, valid
// paths sorted in strictly increasing byte order, and nothing else.
func ParseManifest(b []byte) (Manifest, error) {
	if len(b) > maxManifestLen {
		return nil, errors.New("manifest too large")
	}
	if !bytes.HasPrefix(b, []byte(manifestHeader+"\n")) {
		return nil, errors.New("manifest does not start with the header line")
	}
	sc := bufio.NewScanner(bytes.NewReader(b[len(manifestHeader)+1:]))
	sc.Buffer(make([]byte, 0, 512), 6+1+64+1+MaxPathBytes+1)
	var m Manifest
	line := 1
	for sc.Scan() {
		line++
		t := sc.Text()
		if len(t) < 6+1+64+1+1 || t[6] != ' ' || t[71] != ' ' {
			return nil, fmt.Errorf("manifest line %d is malformed", line)
		}
		mode := t[:6]
		if mode != ModeFile && mode != ModeExec && mode != ModeSymlink {
			return nil, fmt.Errorf("manifest line %d: unknown mode %q", line, mode)
		}
		d, err := Parse(t[7:71])
		if err != nil {
			return nil, fmt.Errorf("manifest line %d: %v", line, err)
		}
		p := t[72:]
		if err := checkTreePath(p); err != nil {
			return nil, fmt.Errorf("manifest line %d: %v", line, err)
		}
		if n := len(m); n > 0 && m[n-1].Path >= p {
			return nil, fmt.Errorf("manifest line %d: paths not in strictly increasing order", line)
		}
		if len(m) >= MaxTreeFiles {
			return nil, fmt.Errorf("manifest has more than %d files", MaxTreeFiles)
		}
		m = append(m, TreeFile{Path: p, Mode: mode, SHA256: d})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("manifest line %d: %v", line+1, err)
	}
	if !bytes.HasSuffix(b, []byte("\n")) {
		return nil, errors.New("manifest does not end with a newline")
	}
	return m, nil
}

// WalkTree calls fn for every entry below root that is not a folder, in
// lexical order, with its slash-separated path relative to root: the
// entries a tree digest covers. A .git folder at the top is left out, and
// symbolic links are passed to fn, never followed. An error from fn stops
// the walk and is returned.
func WalkTree(root string, fn func(p, rel string, d fs.DirEntry) error) error {
	return walk(root, true, fn)
}

// walk is WalkTree, leaving out a top-level .git folder only when
// skipGit is set.
func walk(root string, skipGit bool, fn func(p, rel string, d fs.DirEntry) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skipGit && rel == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		return fn(p, rel, d)
	})
}

// Tree walks root and returns its manifest. It never follows symbolic links.
func Tree(root string) (Manifest, error) { return tree(context.Background(), root, true, nil) }

// Folder is Tree of a folder that is not a source tree (a run folder): a
// .git folder in it counts like any other, so the manifest lists every
// file under root.
func Folder(root string) (Manifest, error) { return tree(context.Background(), root, false, nil) }

// FolderContext is Folder that stops within one read (at most 1 MiB) once
// ctx is done, returning an error that wraps ctx's.
func FolderContext(ctx context.Context, root string) (Manifest, error) {
	return tree(ctx, root, false, nil)
}

// FolderExcept is FolderContext that leaves out the files named in skip
// (paths relative to root, as in the manifest): they are neither read nor
// listed, whatever they are. A caller that reads such a file itself (a
// run folder's record) so reads it once.
func FolderExcept(ctx context.Context, root string, skip ...string) (Manifest, error) {
	return tree(ctx, root, false, skip)
}

func tree(ctx context.Context, root string, skipGit bool, skip []string) (Manifest, error) {
	var m Manifest
	err := walk(root, skipGit, func(p, rel string, d fs.DirEntry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if slices.Contains(skip, rel) {
			return nil
		}
		if err := checkTreePath(rel); err != nil {
			return err
		}
		if len(m) >= MaxTreeFiles {
			return fmt.Errorf("tree has more than %d files", MaxTreeFiles)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		var f TreeFile
		f.Path = rel
		switch {
		case info.Mode().Type() == fs.ModeSymlink:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			f.Mode, f.SHA256 = ModeSymlink, Of([]byte(target))
		case info.Mode().IsRegular():
			f.Mode = ModeFile
			if info.Mode().Perm()&0o111 != 0 {
				f.Mode = ModeExec
			}
			if f.SHA256, _, err = FileContext(ctx, p); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: not a regular file, folder or symbolic link", rel)
		}
		m = append(m, f)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("failed to digest tree %s: %w", root, err)
	}
	sort.Slice(m, func(i, j int) bool { return m[i].Path < m[j].Path })
	return m, nil
}

// TreeFS digests an fs.FS (for trees embedded in the binary) the same way
// as Tree does a folder.
func TreeFS(fsys fs.FS, root string) (Manifest, error) {
	var m Manifest
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		if err := checkTreePath(rel); err != nil {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		m = append(m, TreeFile{Path: rel, Mode: ModeFile, SHA256: Of(b)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("failed to digest tree %s: %w", root, err)
	}
	sort.Slice(m, func(i, j int) bool { return m[i].Path < m[j].Path })
	return m, nil
}
