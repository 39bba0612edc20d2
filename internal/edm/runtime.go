package edm

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/strictjson"
	"golang.org/x/sys/unix"
)

//go:embed runtime/edm_runtime.py
var runtimeFS embed.FS

// RuntimeTreeDigest pins the Python runtime embedded in the binary (the
// repro-tree v1 digest of internal/edm/runtime). It changes only with a
// reviewed change to the runtime, and the runtime is checked against it each
// time it is written out to run.
var RuntimeTreeDigest = digest.MustParse("6c5cd6ce69bed9dfaa87dc024150883188c4983aea89f075886a51d7ad33b00e")

const runtimeScript = "edm_runtime.py"

// DefaultPython is the interpreter the runtime uses unless told otherwise.
const DefaultPython = "/usr/bin/python3"

// Limits on the EDM source tree a user hands over.
const (
	maxSourceFiles = 2000
	maxSourceBytes = 256 << 20
)

// runtimeEnv is a private folder holding the verified runtime and a
// verified copy of the EDM source tree, and the interpreter to run them.
type runtimeEnv struct {
	python string
	dir    string // private, 0700, removed by close
	log    io.Writer
	// treeDigest is the digest of the source copy (equal to the pin).
	treeDigest digest.SHA256
}

func (r *runtimeEnv) runtimeDir() string { return filepath.Join(r.dir, "runtime") }
func (r *runtimeEnv) srcDir() string     { return filepath.Join(r.dir, "src") }

func (r *runtimeEnv) close() error { return os.RemoveAll(r.dir) }

// checkPython resolves the interpreter: an absolute path to an executable
// file. A missing interpreter is an exitcode.Precondition error.
func checkPython(python string) (string, error) {
	if python == "" {
		python = DefaultPython
	}
	if !filepath.IsAbs(python) {
		return "", exitcode.Errorf(exitcode.Usage, "python interpreter %q: give an absolute path", python)
	}
	fi, err := os.Stat(python)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", exitcode.Errorf(exitcode.Precondition, "no Python interpreter at %s: install Debian's python3-torch (or an EDM environment) and pass its interpreter", python)
	}
	return python, nil
}

// prepareRuntime writes the embedded runtime into a new private folder and
// checks it against RuntimeTreeDigest, then copies the EDM source tree from
// srcDir next to it and checks the copy against the pinned tree digest. The
// runtime only ever imports the copy, so the user's folder may change
// afterwards without effect. A missing folder is an exitcode.Precondition
// error; a tree that differs from its pin is an exitcode.Integrity error.
func prepareRuntime(python, srcDir string, pin digest.SHA256, log io.Writer) (_ *runtimeEnv, err error) {
	python, err = checkPython(python)
	if err != nil {
		return nil, err
	}
	if err := checkSourceDir(srcDir); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "repro-edm-")
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot create a private folder for the runtime: %v", err)
	}
	r := &runtimeEnv{python: python, dir: dir, log: log}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if err := writeRuntime(r.runtimeDir()); err != nil {
		return nil, err
	}
	if err := copyTree(srcDir, r.srcDir()); err != nil {
		return nil, err
	}
	m, err := digest.Tree(r.srcDir())
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "EDM source tree %s: %v", srcDir, err)
	}
	r.treeDigest = m.Digest()
	if r.treeDigest != pin {
		return nil, exitcode.New(exitcode.Integrity, sourceMismatch(srcDir, m, pin))
	}
	if err := os.Mkdir(filepath.Join(dir, "cache"), 0o700); err != nil {
		return nil, err
	}
	return r, nil
}

func checkSourceDir(srcDir string) error {
	if srcDir == "" {
		return exitcode.Errorf(exitcode.Precondition, "the EDM source tree is missing: clone it with `git clone %s edm && git -C edm checkout %s` and pass --edm-source edm", EDMRepository, EDMCommit)
	}
	fi, err := os.Stat(srcDir)
	if err != nil {
		return exitcode.Errorf(exitcode.Precondition, "EDM source tree %s is missing (%v): clone it with `git clone %s edm && git -C edm checkout %s`", srcDir, unwrapPathError(err), EDMRepository, EDMCommit)
	}
	if !fi.IsDir() {
		return exitcode.Errorf(exitcode.Precondition, "EDM source tree %s is not a folder", srcDir)
	}
	return nil
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func sourceMismatch(srcDir string, m digest.Manifest, pin digest.SHA256) error {
	hint := fmt.Sprintf("use a clean checkout of %s at commit %s", EDMRepository, EDMCommit)
	for _, f := range m {
		if strings.Contains(f.Path, "__pycache__/") || strings.HasSuffix(f.Path, ".pyc") {
			hint = "the folder holds Python bytecode caches (" + f.Path + "); remove every __pycache__ folder or " + hint
			break
		}
	}
	return fmt.Errorf("EDM source tree %s does not match its pin: tree digest %s, pinned %s (%d files): %s",
		srcDir, m.Digest().Hex(), pin.Hex(), len(m), hint)
}

// writeRuntime writes the embedded runtime to dir and checks its digest.
func writeRuntime(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	err := fs.WalkDir(runtimeFS, "runtime", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := runtimeFS.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, strings.TrimPrefix(p, "runtime/")), b, 0o600)
	})
	if err != nil {
		return fmt.Errorf("failed to write the runtime: %w", err)
	}
	m, err := digest.Tree(dir)
	if err != nil {
		return exitcode.Errorf(exitcode.Integrity, "runtime: %v", err)
	}
	if got := m.Digest(); got != RuntimeTreeDigest {
		return exitcode.Errorf(exitcode.Integrity, "the embedded EDM runtime has tree digest %s, pinned %s: this binary was built from an unreviewed runtime", got.Hex(), RuntimeTreeDigest.Hex())
	}
	return nil
}

// copyTree copies the regular files and folders under src to dst (which
// must not exist), leaving out a .git folder at the root. Symbolic links,
// devices and other special files are refused: the runtime must import only
// bytes that were hashed.
func copyTree(src, dst string) error {
	files, total := 0, int64(0)
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return exitcode.Errorf(exitcode.Precondition, "EDM source tree %s: %v", src, err)
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			if rel == ".git" {
				return filepath.SkipDir
			}
			return os.Mkdir(target, 0o700)
		case d.Type().IsRegular():
		default:
			return exitcode.Errorf(exitcode.Integrity, "EDM source tree %s: %s is not a regular file or folder", src, rel)
		}
		files++
		if files > maxSourceFiles {
			return exitcode.Errorf(exitcode.Precondition, "EDM source tree %s has more than %d files: give a checkout of %s alone", src, maxSourceFiles, EDMRepository)
		}
		in, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return exitcode.Errorf(exitcode.Precondition, "EDM source tree %s: %v", src, err)
		}
		defer in.Close()
		fi, err := in.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return exitcode.Errorf(exitcode.Integrity, "EDM source tree %s: %s changed while it was copied", src, rel)
		}
		total += fi.Size()
		if total > maxSourceBytes {
			return exitcode.Errorf(exitcode.Precondition, "EDM source tree %s holds more than %d bytes: give a checkout of %s alone", src, maxSourceBytes, EDMRepository)
		}
		mode := os.FileMode(0o600)
		if fi.Mode().Perm()&0o111 != 0 {
			mode = 0o700
		}
		out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, io.LimitReader(in, maxSourceBytes+1))
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return err
	})
}

// environ is the whole environment of the runtime: nothing else is
// inherited, so no PYTHON* variable, user site folder or preload reaches it.
// The host's OpenBLAS settings do: on processors where it sets
// OPENBLAS_CORETYPE (and OPENBLAS_L2_SIZE), older OpenBLAS builds compute
// wrong results or crash without them, and the runtime's features must be
// what PyTorch computes on this host, kernel for kernel.
func (r *runtimeEnv) environ() []string {
	env := []string{
		"PATH=" + filepath.Dir(r.python) + ":/usr/local/bin:/usr/bin:/bin",
		"LANG=C.UTF-8",
		"PYTHONPATH=" + r.srcDir(),
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONNOUSERSITE=1",
		"PYTHONSAFEPATH=1",
		"PYTHONUNBUFFERED=1",
		"DNNLIB_CACHE_DIR=" + filepath.Join(r.dir, "cache"),
		"TMPDIR=" + filepath.Join(r.dir, "cache"),
		"HOME=" + filepath.Join(r.dir, "cache"),
	}
	for _, k := range []string{"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_HOME", "LD_LIBRARY_PATH", "OMP_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// runtimeResult is the last stdout line of the runtime.
type runtimeResult struct {
	OK    bool   `json:"ok"`
	Code  int    `json:"code"`
	Error string `json:"error"`
}

// maxRuntimeStdout bounds what is kept of the runtime's stdout.
const maxRuntimeStdout = 1 << 20

// run starts the runtime with action and plan (nil for preflight), handing
// it files as descriptors 3, 4, ... It returns the raw result object. A
// result with code 3 or 4 becomes an exitcode.Precondition or
// exitcode.Integrity error.
func (r *runtimeEnv) run(ctx context.Context, action string, plan any, files []*os.File) (json.RawMessage, error) {
	args := []string{"-B", "-s", filepath.Join(r.runtimeDir(), runtimeScript), action}
	if plan != nil {
		b, err := json.Marshal(plan)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(r.dir, "plan-"+action+".json")
		if err := atomicfile.WriteFile(path, b, 0o600); err != nil {
			return nil, err
		}
		args = append(args, path)
	}
	cmd := exec.CommandContext(ctx, r.python, args...)
	cmd.Env = r.environ()
	cmd.Dir = r.dir
	cmd.ExtraFiles = files
	var stdout limitedBuffer
	stdout.max = maxRuntimeStdout
	cmd.Stdout = &stdout
	tail := &tailBuffer{max: 4 << 10}
	if r.log != nil {
		cmd.Stderr = io.MultiWriter(r.log, tail)
	} else {
		cmd.Stderr = tail
	}
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	line := lastLine(stdout.Bytes())
	var res runtimeResult
	if err := strictjson.DecodeOpen(line, &res); err != nil {
		return nil, fmt.Errorf("EDM runtime (%s) ended without a result (%v): %s", action, runErr, strings.TrimSpace(tail.String()))
	}
	if !res.OK {
		msg := "EDM runtime: " + res.Error
		switch res.Code {
		case int(exitcode.Precondition):
			return nil, exitcode.New(exitcode.Precondition, errors.New(msg))
		case int(exitcode.Integrity):
			return nil, exitcode.New(exitcode.Integrity, errors.New(msg))
		}
		return nil, errors.New(msg)
	}
	if runErr != nil {
		return nil, fmt.Errorf("EDM runtime (%s) reported success but exited with %v", action, runErr)
	}
	return json.RawMessage(line), nil
}

func lastLine(b []byte) []byte {
	b = bytes.TrimRight(b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

// limitedBuffer keeps the first max bytes written to it and drops the rest.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.buf) }
