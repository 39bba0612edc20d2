package sandbox

import (
	"context"
	"fmt"
	"io"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/safefile"
)

// SaveImage writes the image with ID id, as the engine saves it (a
// docker-format tarball without tags), to w.
func (e *Engine) SaveImage(ctx context.Context, id string, w io.Writer) error {
	rc, err := e.cli.ImageSave(ctx, []string{id})
	if err != nil {
		return exitcode.Errorf(exitcode.Precondition, "the engine cannot save image %s: %v", id, err)
	}
	defer rc.Close()
	if _, err := io.Copy(w, rc); err != nil {
		return fmt.Errorf("failed to save image %s: %w", id, err)
	}
	return nil
}

// LoadImage loads the docker-format image tarball at path into the engine
// and checks that the engine then holds an image with ID want (exit 4
// when it does not: the tarball is not that image). The caller checks the
// tarball's digest before: a load may add or retag images.
func (e *Engine) LoadImage(ctx context.Context, path string, want Image) error {
	f, err := safefile.OpenRegular(path)
	if err != nil {
		return exitcode.Errorf(exitcode.Precondition, "image tarball %q: %v", path, err)
	}
	defer f.Close()
	if err := e.loadTar(ctx, f); err != nil {
		return exitcode.Errorf(exitcode.Integrity, "image tarball %q: %v", path, err)
	}
	if err := e.verifyImage(ctx, want); err != nil {
		if exitcode.Of(err) == exitcode.Precondition {
			return exitcode.Errorf(exitcode.Integrity, "image tarball %q loaded, but the engine holds no image %s: the tarball is another image", path, want.ID)
		}
		return err
	}
	return nil
}
