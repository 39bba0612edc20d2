package report

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
)

// Render builds the report of run id of home (BuildContext, which stops
// when ctx is done) and returns it with its text in format (Write).
func Render(ctx context.Context, home, id, format string) (*Report, []byte, error) {
	rep, err := BuildContext(ctx, home, id)
	if err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	if err := Write(&buf, rep, format); err != nil {
		return nil, nil, err
	}
	return rep, buf.Bytes(), nil
}

// ExportRun writes the report of run id of home in format to the file
// out, atomically, and returns it. An out inside the run folders is
// refused before anything is read (exit 2): a report written there would
// change the run it describes. Once ctx is done it stops (Render) and
// writes nothing.
func ExportRun(ctx context.Context, home, id, format, out string) (*Report, error) {
	abs, err := filepath.Abs(out)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "--out %q: %v", out, err)
	}
	if within(layout.Home(home).Runs(), abs) {
		return nil, exitcode.Errorf(exitcode.Usage, "--out %q is inside the run folders; a report written there would change the run it describes", out)
	}
	rep, b, err := Render(ctx, home, id, format)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(out, b, 0o644); err != nil {
		return nil, fmt.Errorf("cannot write the report to %q: %w", out, err)
	}
	return rep, nil
}

// within reports whether path lies in folder dir, comparing both as
// written and with symbolic links resolved (path's folder must exist for a
// report to be written there, so a link to a run folder is seen through).
func within(dir, path string) bool {
	inside := func(dir, path string) bool {
		rel, err := filepath.Rel(dir, path)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
	}
	if inside(dir, path) {
		return true
	}
	rdir, err1 := filepath.EvalSymlinks(dir)
	rparent, err2 := filepath.EvalSymlinks(filepath.Dir(path))
	return err1 == nil && err2 == nil && inside(rdir, filepath.Join(rparent, filepath.Base(path)))
}
