package humaneval

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/sandbox"
)

// Input is a run's samples: the user's file or folder, its copy in the
// run's workspace (what is parsed and run), and the digest of the
// original, taken again at the end of the run.
type Input struct {
	Path      string        `json:"path"`
	Format    string        `json:"format"` // "jsonl" or "folder"
	SHA256    digest.SHA256 `json:"sha256"` // of the file, or of the folder's sample files
	Workspace string        `json:"workspace"`
	WSDigest  digest.SHA256 `json:"workspace_digest"`
	Samples   int           `json:"samples"`
	Warnings  []string      `json:"warnings,omitempty"`
	Set       *SampleSet    `json:"-"`

	ws *sandbox.Workspace
	d  *Dataset
}

// maxSamplesFile bounds a samples file (the workspace copies at most this).
const maxSamplesFile = 64 << 20

// CheckSamples validates the samples at path before anything is created
// for a run: a .jsonl file that parses, or a folder in EvalPlus's layout,
// with a sample for every task in tasks (all of d's when tasks is nil). It
// copies nothing; PrepareSamples checks the run's copy again. Every error
// is a usage error naming the path.
func CheckSamples(path string, d *Dataset, tasks []*Task) error {
	set := &SampleSet{ByTask: map[string][]*Sample{}}
	fi, err := samplesKind(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		files, _, err := ListSamplesDir(path, d)
		if err != nil {
			return err
		}
		for _, f := range files {
			set.ByTask[f.TaskID] = append(set.ByTask[f.TaskID], &Sample{TaskID: f.TaskID, Origin: f.Path})
		}
	} else {
		f, err := safefile.OpenRegular(path)
		if err != nil {
			return exitcode.Errorf(exitcode.Usage, "samples %q: %v", path, err)
		}
		defer f.Close()
		if set, err = ReadSamplesJSONL(f, path, d); err != nil {
			return err
		}
	}
	if miss := set.Missing(d, tasks); len(miss) > 0 {
		return exitcode.Errorf(exitcode.Usage, "samples %q have no sample for %d tasks: %s (every task needs one, or name a subset with --tasks)",
			path, len(miss), strings.Join(miss, ", "))
	}
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

// PrepareSamples copies the samples at path (a .jsonl file or a folder in
// EvalPlus's layout) into wsDir, a new read-only workspace, and parses the
// copy. A file that changes while it is copied is an integrity error; bad
// samples are a usage error naming the file and line.
func PrepareSamples(path, wsDir string, d *Dataset) (*Input, error) {
	fi, err := samplesKind(path)
	if err != nil {
		return nil, err
	}
	in := &Input{Path: path, Workspace: wsDir, d: d}
	switch {
	case fi.Mode().IsRegular():
		in.Format = "jsonl"
		if in.SHA256, err = hashSample(path, maxSamplesFile); err != nil {
			return nil, exitcode.Errorf(exitcode.Usage, "samples %q: %v", path, err)
		}
		if in.ws, err = sandbox.NewWorkspace(wsDir, []string{path}); err != nil {
			return nil, exitcode.Errorf(exitcode.Usage, "samples %q: %v", path, err)
		}
		copyPath := filepath.Join(wsDir, filepath.Base(path))
		if err := sameContent(copyPath, in.SHA256, path); err != nil {
			return nil, err
		}
		f, err := safefile.OpenRegular(copyPath)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if in.Set, err = ReadSamplesJSONL(f, path, d); err != nil {
			return nil, err
		}
	case fi.IsDir():
		in.Format = "folder"
		files, warn, err := ListSamplesDir(path, d)
		if err != nil {
			return nil, err
		}
		in.Warnings = warn
		staging, err := os.MkdirTemp(filepath.Dir(wsDir), ".staging-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(staging)
		staged := make([]string, len(files))
		for i, f := range files {
			b, err := safefile.ReadFile(f.Path, maxProgram)
			if err != nil {
				return nil, exitcode.Errorf(exitcode.Usage, "sample %q: %v", f.Path, err)
			}
			staged[i] = filepath.Join(staging, f.Flat)
			if err := os.WriteFile(staged[i], b, 0o444); err != nil {
				return nil, err
			}
		}
		if in.SHA256, err = folderDigest(files, func(f SampleFile) string { return f.Path }); err != nil {
			return nil, err
		}
		if in.ws, err = sandbox.NewWorkspace(wsDir, staged); err != nil {
			return nil, exitcode.Errorf(exitcode.Usage, "samples %q: %v", path, err)
		}
		got, err := folderDigest(files, func(f SampleFile) string { return filepath.Join(wsDir, f.Flat) })
		if err != nil {
			return nil, err
		}
		if got != in.SHA256 {
			return nil, exitcode.Errorf(exitcode.Integrity, "samples %q changed while they were copied", path)
		}
		in.Set = &SampleSet{ByTask: map[string][]*Sample{}}
		for _, f := range files {
			if err := ReadSampleFile(in.Set, f, filepath.Join(wsDir, f.Flat)); err != nil {
				return nil, err
			}
		}
	}
	in.WSDigest = in.ws.Digest()
	in.Samples = in.Set.Count
	in.Warnings = append(in.Warnings, in.Set.Warnings...)
	return in, nil
}

// Check reports, as an integrity error, any change to the workspace copy
// or to the original samples since PrepareSamples.
func (in *Input) Check() error {
	if err := in.ws.Check(); err != nil {
		return err
	}
	var now digest.SHA256
	var err error
	if in.Format == "jsonl" {
		now, err = hashSample(in.Path, maxSamplesFile)
	} else {
		// Listed afresh, so that an added or removed sample counts too.
		var files []SampleFile
		if files, _, err = ListSamplesDir(in.Path, in.d); err == nil {
			now, err = folderDigest(files, func(f SampleFile) string { return f.Path })
		}
	}
	if err != nil || now != in.SHA256 {
		return exitcode.Errorf(exitcode.Integrity, "samples %q changed during the run (they were scored from the copy taken at the start, which is intact, but the results no longer describe the file)", in.Path)
	}
	return nil
}

// hashSample hashes a regular file of at most max bytes without following
// a link.
func hashSample(path string, max int64) (digest.SHA256, error) {
	f, err := safefile.OpenRegular(path)
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
	d, _, err := digest.ReaderFrom(f)
	return d, err
}

// sameContent checks that the copy at p has the digest want.
func sameContent(p string, want digest.SHA256, orig string) error {
	got, err := hashSample(p, maxSamplesFile)
	if err != nil {
		return err
	}
	if got != want {
		return exitcode.Errorf(exitcode.Integrity, "samples %q changed while it was copied", orig)
	}
	return nil
}

// folderDigest digests the sample files of a folder: one line per file,
// "<flat name> <sha256>\n", in the listing's order.
func folderDigest(files []SampleFile, at func(SampleFile) string) (digest.SHA256, error) {
	h := digest.NewHash()
	for _, f := range files {
		d, err := hashSample(at(f), maxProgram)
		if err != nil {
			return digest.SHA256{}, fmt.Errorf("sample %q: %v", f.Path, err)
		}
		fmt.Fprintf(h, "%s %s\n", f.Flat, d.Hex())
	}
	return h.Digest(), nil
}
