package sandbox_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/moby/moby/client"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

// TestLoadImageChecksTheID saves the evaluator image and loads it back:
// the engine then holds the pinned ID. A tarball of another image, loaded
// in its place, is refused with exit 4 naming the tarball, whatever it is
// tagged: the ID is what is checked.
func TestLoadImageChecksTheID(t *testing.T) {
	e := sandboxtest.Engine(t)
	img := sandboxtest.Image(t, e)
	ctx := context.Background()
	dir := t.TempDir()

	saved := filepath.Join(dir, "evaluator.tar")
	f, err := os.Create(saved)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SaveImage(ctx, img.ID, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := e.LoadImage(ctx, saved, img, nil); err != nil {
		t.Fatalf("loading the saved evaluator image: %v", err)
	}

	// Another image, tagged as the evaluator image's tag would be.
	other, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag("repro-test/not-the-evaluator:shard")
	if err != nil {
		t.Fatal(err)
	}
	otherID, _ := other.ConfigName()
	t.Cleanup(func() {
		e.Client().ImageRemove(context.Background(), otherID.String(), client.ImageRemoveOptions{Force: true})
	})
	bad := filepath.Join(dir, "other.tar")
	if err := tarball.WriteToFile(bad, ref, other); err != nil {
		t.Fatal(err)
	}
	want := sandbox.Image{ID: "sha256:" + strings.Repeat("ab", 32)}
	err = e.LoadImage(ctx, bad, want, nil)
	if exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), bad) {
		t.Fatalf("another image's tarball: %v (exit %d), want exit 4 naming %q", err, exitcode.Of(err), bad)
	}
}

// TestArchiveInReprosFormLoads: an image the engine does not hold, saved
// in repro's tar form (only manifest.json, the configuration and the
// layers, no folder entries, no tags), loads into the engine, which then
// holds its ID; the engine needs nothing the form leaves out.
func TestArchiveInReprosFormLoads(t *testing.T) {
	e := sandboxtest.Engine(t)
	ctx := context.Background()
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := img.ConfigName()
	t.Cleanup(func() {
		e.Client().ImageRemove(context.Background(), id.String(), client.ImageRemoveOptions{Force: true})
	})
	if _, err := e.Client().ImageInspect(ctx, id.String()); err == nil {
		t.Fatalf("the engine already holds the random image %s", id)
	}
	ref, _ := name.NewTag("repro-test/canonical-archive:load")
	var saved, canon bytes.Buffer
	if err := tarball.Write(ref, img, &saved); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.WriteImageArchive(&saved, &canon); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "image.tar")
	if err := os.WriteFile(p, canon.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.LoadImage(ctx, p, sandbox.Image{ID: id.String()}, nil); err != nil {
		t.Fatalf("loading an archive in repro's form: %v", err)
	}
	insp, err := e.Client().ImageInspect(ctx, id.String())
	if err != nil {
		t.Fatalf("the engine does not hold %s after the load: %v", id, err)
	}
	if len(insp.RepoTags) != 0 {
		t.Errorf("the load tagged the image %v", insp.RepoTags)
	}
}
