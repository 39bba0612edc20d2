package codebench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/sandbox"
)

// Input is a run's samples: the user's file or folder, what was read of it
// (Set, parsed from the bytes LoadSamples read once), their copy in the
// run's workspace, and the digest of what was read, which the original
// must still have at the end of the run (Check).
type Input struct {
	Path      string          `json:"path"`
	Format    string          `json:"format"` // "jsonl" or "folder"
	SHA256    digest.SHA256   `json:"sha256"` // of the file, or of the folder's sample files
	Workspace string          `json:"workspace"`
	WSDigest  digest.SHA256   `json:"workspace_digest"`
	Samples   int             `json:"samples"`
	Warnings  []string        `json:"warnings,omitempty"`
	Set       *task.SampleSet `json:"-"`

	ws *sandbox.Workspace
	d  *task.Dataset
}

// maxSamplesFile bounds a samples file (the workspace copies at most this).
const maxSamplesFile = 64 << 20

// LoadedSamples are the user's samples as LoadSamples read them: the bytes
// read once, their digest and what they parse to. The programs are kept
// on disk (task.ProgramFile), and so is a file's copy as read, which
// Prepare copies, rather than the file, into a run's workspace: what a run
// holds of its samples in memory does not grow with their programs. Close
// releases both.
type LoadedSamples struct {
	Path     string
	Format   string        // "jsonl" or "folder"
	SHA256   digest.SHA256 // of the file, or of the folder's sample files (folderDigest)
	Set      *task.SampleSet
	Warnings []string // the folder's entries that are not samples (the set's own are in Set.Warnings)

	d        *task.Dataset
	programs *task.ProgramFile
	read     *os.File          // the file's bytes as read, unlinked, with Format "jsonl"; nil once Prepared
	size     int64             // how many
	files    []task.SampleFile // the folder's sample files, with Format "folder"
	progs    []*task.Sample    // files[i]'s sample, whose program is the file's bytes
	prepared bool
}

// LoadSamples reads the samples at path once, before anything is created
// for a run: a .jsonl file of at most 64 MiB that parses, or a folder in
// EvalPlus's layout whose programs are each at most 1 MiB of UTF-8, with a
// sample for every task in tasks (all of d's when tasks is nil). This is
// the one check that every task has a sample. A link is not followed.
// Every error is a usage error naming the path. What it returns is all a
// run needs of the samples until Input.Check hashes them again at its end;
// it keeps them in unlinked files in tmp, one program at a time in memory
// as it reads, and the caller must Close it.
func LoadSamples(path string, d *task.Dataset, tasks []*task.Task, tmp string) (*LoadedSamples, error) {
	fi, err := samplesKind(path)
	if err != nil {
		return nil, err
	}
	s := &LoadedSamples{Path: path, d: d}
	if s.programs, err = task.NewProgramFile(tmp); err != nil {
		return nil, exitcode.New(exitcode.Precondition, err)
	}
	if fi.IsDir() {
		err = s.loadFolder()
	} else {
		err = s.loadJSONL(fi.Size(), tmp)
	}
	if err == nil {
		err = s.programs.Flush()
	}
	if err == nil {
		if miss := s.Set.Missing(d, tasks); len(miss) > 0 {
			err = exitcode.Errorf(exitcode.Usage, "samples %q have no sample for %d tasks: %s (every task needs one, or name a subset with --tasks)",
				path, len(miss), strings.Join(miss, ", "))
		}
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close releases the files that keep the samples: their programs can no
// longer be read.
func (s *LoadedSamples) Close() error {
	if s.read != nil {
		s.read.Close()
		s.read = nil
	}
	return s.programs.Close()
}

// loadJSONL reads and parses a samples file of size bytes (as listed), in
// one pass that hashes the bytes and keeps a copy of them in an unlinked
// file in tmp.
func (s *LoadedSamples) loadJSONL(size int64, tmp string) error {
	s.Format = "jsonl"
	if size > maxSamplesFile {
		return exitcode.Errorf(exitcode.Usage, "samples %q: %d bytes is over the limit of %d", s.Path, size, int64(maxSamplesFile))
	}
	f, err := openSample("", s.Path)
	if err != nil {
		return exitcode.Errorf(exitcode.Usage, "samples %q: %v", s.Path, err)
	}
	defer f.Close()
	if s.read, err = safefile.CreateUnlinked(tmp, ".samples-*"); err != nil {
		return exitcode.Errorf(exitcode.Precondition, "cannot keep a copy of samples %q: %v", s.Path, err)
	}
	h := digest.NewHash()
	cp := &keepWriter{w: bufio.NewWriterSize(s.read, 1<<16)}
	// A file that grows after the Stat is read no further than the limit
	// and one byte.
	lr := &io.LimitedReader{R: f, N: maxSamplesFile + 1}
	r := io.TeeReader(lr, io.MultiWriter(h, cp))
	s.Set, err = task.ReadSamplesJSONL(r, s.Path, s.d, s.programs)
	if err != nil {
		// What made the file unreadable may be that it grew: read on to
		// the limit, so that a file over it is named as such.
		io.Copy(io.Discard, r)
	}
	n := maxSamplesFile + 1 - lr.N // the bytes read
	switch {
	case n > maxSamplesFile:
		return exitcode.Errorf(exitcode.Usage, "samples %q: over the limit of %d bytes", s.Path, int64(maxSamplesFile))
	case cp.err != nil:
		return exitcode.Errorf(exitcode.Precondition, "cannot keep a copy of samples %q: %v", s.Path, cp.err)
	case err != nil:
		return err
	}
	if err := cp.w.Flush(); err != nil {
		return exitcode.Errorf(exitcode.Precondition, "cannot keep a copy of samples %q: %v", s.Path, err)
	}
	s.size, s.SHA256 = n, h.Digest()
	return nil
}

// keepWriter writes to w until the first error, which it keeps rather
// than returns: a copy that cannot be written (a full disk) is not taken
// for a fault of the file being read.
type keepWriter struct {
	w   *bufio.Writer
	err error
}

func (k *keepWriter) Write(b []byte) (int, error) {
	if k.err == nil {
		_, k.err = k.w.Write(b)
	}
	return len(b), nil
}

// loadFolder lists a samples folder and reads each of its programs.
func (s *LoadedSamples) loadFolder() error {
	s.Format = "folder"
	files, warn, err := task.ListSamplesDir(s.Path, s.d)
	if err != nil {
		return err
	}
	s.Warnings = warn
	s.Set = &task.SampleSet{ByTask: map[string][]*task.Sample{}, Programs: s.programs}
	h := digest.NewHash()
	var total int64
	for _, f := range files {
		b, err := readSample(s.Path, f.Path, task.MaxProgram)
		if errors.Is(err, safefile.ErrTooLarge) {
			return exitcode.Errorf(exitcode.Usage, "sample %q: larger than the %d bytes a program may have", f.Path, task.MaxProgram)
		}
		if err != nil {
			return exitcode.Errorf(exitcode.Usage, "sample %q: %v", f.Path, err)
		}
		// A folder holds no more than a samples file may.
		if total += int64(len(b)); total > maxSamplesFile {
			return exitcode.Errorf(exitcode.Usage, "samples folder %q: its programs are over the limit of %d bytes in all", s.Path, int64(maxSamplesFile))
		}
		smp, err := s.Set.AddProgram(f, b)
		if err != nil {
			return err
		}
		s.progs = append(s.progs, smp)
		folderLine(h, f, digest.Of(b))
	}
	s.files, s.SHA256 = files, h.Digest()
	return nil
}

// samplesKind checks that path is a .jsonl file or a folder, not a link.
func samplesKind(path string) (os.FileInfo, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "samples %q: %v", path, err)
	}
	switch {
	case fi.Mode().IsRegular():
		if !strings.HasSuffix(path, ".jsonl") {
			return nil, exitcode.Errorf(exitcode.Usage, "samples %q: a samples file must end in .jsonl (or give a folder)", path)
		}
	case fi.IsDir():
	default:
		return nil, exitcode.Errorf(exitcode.Usage, "samples %q: not a regular file or a folder", path)
	}
	return fi, nil
}

// Prepare writes the samples as they were read into wsDir, a new
// read-only workspace (sandbox.WriteWorkspace), and checks the copy: a
// copy that does not hash to s.SHA256 is an integrity error. It reads
// nothing of the user's samples: a file's bytes come from the copy
// LoadSamples kept, a folder's programs from the program file (each
// checked against its digest). The returned Input's Set is s.Set. Prepare
// is called once: a file's copy is let go once it is in the workspace.
func (s *LoadedSamples) Prepare(wsDir string) (*Input, error) {
	if s.prepared {
		return nil, fmt.Errorf("samples %q were already copied into a workspace", s.Path)
	}
	s.prepared = true
	in := &Input{Path: s.Path, Format: s.Format, SHA256: s.SHA256, Workspace: wsDir, Set: s.Set, d: s.d}
	var files []sandbox.WorkspaceFile
	if s.Format == "jsonl" {
		files = []sandbox.WorkspaceFile{{Name: filepath.Base(s.Path), Data: io.NewSectionReader(s.read, 0, s.size), Origin: s.Path}}
	} else {
		files = make([]sandbox.WorkspaceFile, len(s.files))
		for i, f := range s.files {
			files[i] = sandbox.WorkspaceFile{Name: f.Flat, Data: &programReader{smp: s.progs[i]}, Origin: f.Path}
		}
	}
	var err error
	if in.ws, err = sandbox.WriteWorkspace(wsDir, files); err != nil {
		if exitcode.Of(err) == exitcode.Integrity {
			return nil, err
		}
		return nil, exitcode.Errorf(exitcode.Usage, "samples %q: %v", s.Path, err)
	}
	var got digest.SHA256
	if s.Format == "jsonl" {
		got, err = hashSample("", filepath.Join(wsDir, filepath.Base(s.Path)), maxSamplesFile)
	} else {
		got, err = folderDigest(wsDir, s.files, func(f task.SampleFile) string { return filepath.Join(wsDir, f.Flat) })
	}
	if err != nil {
		return nil, err
	}
	if got != s.SHA256 && s.Format == "jsonl" {
		return nil, exitcode.Errorf(exitcode.Integrity, "samples %q changed while it was copied", s.Path)
	} else if got != s.SHA256 {
		return nil, exitcode.Errorf(exitcode.Integrity, "samples %q changed while they were copied", s.Path)
	}
	if s.read != nil {
		s.read.Close()
		s.read = nil
	}
	in.WSDigest = in.ws.Digest()
	in.Samples = s.Set.Count
	in.Warnings = append(append([]string(nil), s.Warnings...), s.Set.Warnings...)
	return in, nil
}

// programReader reads a sample's program, read back (and checked) from
// where it is kept on its first Read.
type programReader struct {
	smp *task.Sample
	r   *bytes.Reader
}

func (p *programReader) Read(b []byte) (int, error) {
	if p.r == nil {
		prog, err := p.smp.Program()
		if err != nil {
			return 0, err
		}
		p.r = bytes.NewReader(prog)
	}
	return p.r.Read(b)
}

// Check reports, as an integrity error, any change to the workspace copy
// since Prepare, or to the original samples since LoadSamples read them.
// It reads the samples again (a file once, each file of a folder once).
func (in *Input) Check() error {
	if err := in.ws.Check(); err != nil {
		return err
	}
	var now digest.SHA256
	var err error
	if in.Format == "jsonl" {
		now, err = hashSample("", in.Path, maxSamplesFile)
	} else {
		// Listed afresh, so that an added or removed sample counts too.
		var files []task.SampleFile
		if files, _, err = task.ListSamplesDir(in.Path, in.d); err == nil {
			now, err = folderDigest(in.Path, files, func(f task.SampleFile) string { return f.Path })
		}
	}
	if err != nil || now != in.SHA256 {
		return exitcode.Errorf(exitcode.Integrity, "samples %q changed during the run (they were scored from the copy taken at the start, which is intact, but the results no longer describe the file)", in.Path)
	}
	return nil
}

// hashSample hashes a regular file of at most max bytes without following
// a link (see openSample for root).
func hashSample(root, path string, max int64) (digest.SHA256, error) {
	f, err := openSample(root, path)
	if err != nil {
		return digest.SHA256{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return digest.SHA256{}, err
	}
	if fi.Size() > max {
		return digest.SHA256{}, fmt.Errorf("%d bytes is over the limit of %d", fi.Size(), max)
	}
	// A file that grows after the Stat is read no further than max+1
	// bytes.
	d, n, err := digest.ReaderFrom(io.LimitReader(f, max+1))
	if err == nil && n > max {
		err = fmt.Errorf("over the limit of %d bytes", max)
	}
	return d, err
}

// folderDigest digests the sample files of a folder: one line per file,
// "<flat name> <sha256>\n", in the listing's order. at(f) is f's path
// inside the folder root.
func folderDigest(root string, files []task.SampleFile, at func(task.SampleFile) string) (digest.SHA256, error) {
	h := digest.NewHash()
	for _, f := range files {
		d, err := hashSample(root, at(f), task.MaxProgram)
		if err != nil {
			return digest.SHA256{}, fmt.Errorf("sample %q: %v", f.Path, err)
		}
		folderLine(h, f, d)
	}
	return h.Digest(), nil
}

// folderLine writes f's line of a folder's digest: "<flat name> <sha256>\n".
func folderLine(h io.Writer, f task.SampleFile, d digest.SHA256) {
	fmt.Fprintf(h, "%s %s\n", f.Flat, d.Hex())
}

// readSample reads a regular file of at most max bytes without following
// a link (see openSample for root); a larger file is an error wrapping
// safefile.ErrTooLarge.
func readSample(root, path string, max int64) ([]byte, error) {
	f, err := openSample(root, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return safefile.ReadAtMost(f, path, max)
}

// openSample opens a file of samples (the user's or a workspace copy)
// without following a link. With root (a samples folder, or a workspace),
// path is a file inside it, and no element between root and the file is
// followed if it is a link: a task folder swapped for a link after
// ListSamplesDir listed it is an error, never a read of another folder.
// Every read of the user's samples goes through it (readSample,
// hashSample), so that a test can count them: if sampleOpened holds a
// function, it is called with each path first.
func openSample(root, path string) (*os.File, error) {
	if seen := sampleOpened.Load(); seen != nil {
		(*seen)(path)
	}
	if root == "" {
		return safefile.OpenRegular(path)
	}
	rel, err := filepath.Rel(root, path)
	if err != nil || !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("%q is not inside %q", path, root)
	}
	return safefile.OpenBeneath(root, rel)
}

// sampleOpened is nil but in a test of this package (see openSample).
var sampleOpened atomic.Pointer[func(path string)]

// pathTraced is nil but in a test of this package, which traces the path
// of a sample from the command to its verdicts: if it holds a function,
// the run calls it at each traced point (tracePath).
var pathTraced atomic.Pointer[func(point string)]

// tracePath tells pathTraced's function, if any, that a sample's path
// reached point: "job" when a job goes to the supervisor's wire, "judge"
// when one of its outputs is judged.
func tracePath(point string) {
	if f := pathTraced.Load(); f != nil {
		(*f)(point)
	}
}
