package sandbox

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

func newTestWorkspace(t *testing.T) *Workspace {
	t.Helper()
	src := t.TempDir()
	var paths []string
	for _, n := range []string{"a.py", "b.py"} {
		p := filepath.Join(src, n)
		os.WriteFile(p, []byte("def f():\n    return '"+n+"'\n"), 0o600)
		paths = append(paths, p)
	}
	ws, err := NewWorkspace(filepath.Join(t.TempDir(), "ws"), paths)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// TestWorkspaceCheck changes the host copy the ways a program inside a
// container would like to, and requires Check to name each change with
// exit code 4.
func TestWorkspaceCheck(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(dir string) error
		want   string
	}{
		"content": {func(d string) error {
			os.Chmod(filepath.Join(d, "a.py"), 0o644)
			err := os.WriteFile(filepath.Join(d, "a.py"), []byte("def f(): return 1\n"), 0o644)
			os.Chmod(filepath.Join(d, "a.py"), 0o444)
			return err
		}, "a.py: content changed"},
		"mode":    {func(d string) error { return os.Chmod(filepath.Join(d, "a.py"), 0o777) }, "a.py: mode changed"},
		"rename":  {func(d string) error { return os.Rename(filepath.Join(d, "a.py"), filepath.Join(d, "c.py")) }, "a.py: missing"},
		"extra":   {func(d string) error { return os.WriteFile(filepath.Join(d, "extra.py"), nil, 0o444) }, "extra.py: extra entry"},
		"missing": {func(d string) error { return os.Remove(filepath.Join(d, "b.py")) }, "b.py: missing"},
		"symlink": {func(d string) error {
			os.Remove(filepath.Join(d, "a.py"))
			return os.Symlink("/etc/passwd", filepath.Join(d, "a.py"))
		}, "a.py: type changed"},
		"hard link": {func(d string) error { return os.Link(filepath.Join(d, "a.py"), filepath.Join(t.TempDir(), "x")) }, "a.py: link count changed"},
		"replace": {func(d string) error {
			b, _ := os.ReadFile(filepath.Join(d, "a.py"))
			os.WriteFile(filepath.Join(d, ".tmp"), b, 0o444)
			return os.Rename(filepath.Join(d, ".tmp"), filepath.Join(d, "a.py"))
		}, "a.py: replaced by another file"},
		"folder mode": {func(d string) error { return os.Chmod(d, 0o777) }, "mode changed"},
	} {
		t.Run(name, func(t *testing.T) {
			ws := newTestWorkspace(t)
			if err := ws.Check(); err != nil {
				t.Fatalf("fresh workspace: %v", err)
			}
			os.Chmod(ws.Dir(), 0o755)
			if err := tc.change(ws.Dir()); err != nil {
				t.Fatal(err)
			}
			if name != "folder mode" {
				os.Chmod(ws.Dir(), 0o555)
			}
			err := ws.Check()
			if exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check() = %v (code %v), want an integrity error naming %q", err, exitcode.Of(err), tc.want)
			}
		})
	}
}

func TestNewWorkspaceRefuses(t *testing.T) {
	src := t.TempDir()
	good := filepath.Join(src, "a.py")
	os.WriteFile(good, []byte("x"), 0o644)
	link := filepath.Join(src, "link.py")
	os.Symlink(good, link)
	fifo := filepath.Join(src, "fifo.py")
	syscall.Mkfifo(fifo, 0o644)
	other := filepath.Join(t.TempDir(), "a.py")
	os.WriteFile(other, []byte("y"), 0o644)
	for name, samples := range map[string][]string{
		"symlink":   {link},
		"fifo":      {fifo},
		"folder":    {src},
		"duplicate": {good, other},
		"missing":   {filepath.Join(src, "none.py")},
	} {
		if _, err := NewWorkspace(filepath.Join(t.TempDir(), "ws"), samples); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ws := newTestWorkspace(t)
	if got := strings.Join(ws.Files(), ","); got != "a.py,b.py" {
		t.Errorf("files %s", got)
	}
	if ms := ws.Mounts("/workspace/samples"); len(ms) != 2 || ms[0].Target != "/workspace/samples/a.py" {
		t.Errorf("mounts %+v", ms)
	}
	if ws.Digest() != newTestWorkspace(t).Digest() {
		t.Error("the same samples give different digests")
	}
}

// TestWriteWorkspace: samples given as bytes make the same workspace as
// the same bytes copied from files, and are refused for the same names,
// each refusal naming the sample's origin.
func TestWriteWorkspace(t *testing.T) {
	empty := func() io.Reader { return strings.NewReader("") }
	mk := func(files ...WorkspaceFile) (*Workspace, error) {
		return WriteWorkspace(filepath.Join(t.TempDir(), "ws"), files)
	}
	ws, err := mk(WorkspaceFile{"a.py", strings.NewReader("def f():\n    return 'a.py'\n"), "/u/a.py"},
		WorkspaceFile{"b.py", strings.NewReader("def f():\n    return 'b.py'\n"), "/u/b.py"})
	if err != nil {
		t.Fatal(err)
	}
	if ws.Digest() != newTestWorkspace(t).Digest() {
		t.Error("the same samples as bytes and as files give different workspaces")
	}
	if err := ws.Check(); err != nil {
		t.Errorf("fresh workspace: %v", err)
	}
	for _, n := range ws.Files() {
		fi, err := os.Lstat(filepath.Join(ws.Dir(), n))
		if err != nil || fi.Mode() != 0o444 {
			t.Errorf("%s: %v, mode %v; want a regular file of mode 0444", n, err, fi.Mode())
		}
	}
	for name, c := range map[string]struct {
		files []WorkspaceFile
		want  string
	}{
		"unusable":  {[]WorkspaceFile{{"a:b.jsonl", empty(), "/u/a:b.jsonl"}}, "sample /u/a:b.jsonl: unusable file name"},
		"dot-dot":   {[]WorkspaceFile{{"..", empty(), "/u/x"}}, "sample /u/x: unusable file name"},
		"duplicate": {[]WorkspaceFile{{"a.py", empty(), "/u/a.py"}, {"a.py", empty(), "/v/a.py"}}, "sample /v/a.py: another sample has the same name a.py"},
		"too large": {[]WorkspaceFile{{"a.py", bytes.NewReader(make([]byte, maxSampleSize+1)), "/u/a.py"}}, "sample /u/a.py: more than the 67108864 bytes allowed"},
	} {
		if _, err := mk(c.files...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error with %q", name, err, c.want)
		}
	}
}
