package sandbox

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"slices"

	"github.com/moby/moby/client"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/strictjson"
	"github.com/reprolab/repro/internal/tarball"
)

// Bounds of an image archive (a docker-save tarball) that CheckImageArchive
// reads: entries, the size of a member kept in memory (JSON files) and of
// all of them, and the size of a layer after decompression (and before).
const (
	maxArchiveEntries   = 4096
	maxArchiveJSON      = 4 << 20
	maxArchiveSmall     = 64 << 20
	maxArchiveLayerSize = 16 << 30
)

// archiveLimits bound the reading of an image archive, counted in bytes
// read: each member within a layer's bound, 32 GiB in all.
var archiveLimits = tarball.Limits{Entries: maxArchiveEntries, EntrySize: maxArchiveLayerSize, Bytes: 2 * maxArchiveLayerSize, NameBytes: 1024}

// SaveImage writes the image with ID id, as the engine saves it (docker
// save of the ID), to w as an archive in repro's tar form
// (internal/tarball): manifest.json, the image configuration and the
// layers it names, nothing else (the engine's legacy per-layer VERSION
// and json files, an OCI index.json and oci-layout, and folder entries
// are left out; no tags). An ID the engine does not hold is an
// exitcode.Precondition error. LoadImage reads the archive back.
func (e *Engine) SaveImage(ctx context.Context, id string, w io.Writer) error {
	if err := e.verifyImage(ctx, Image{ID: id}); err != nil {
		return err
	}
	r, err := e.cli.ImageSave(ctx, []string{id})
	if err != nil {
		return exitcode.Errorf(exitcode.Precondition, "the engine cannot save image %s: %v", id, err)
	}
	defer r.Close()
	if err := writeImageArchive(r, w); err != nil {
		return fmt.Errorf("failed to save image %s: %w", id, err)
	}
	return nil
}

// writeImageArchive rewrites the engine's docker-save tarball r as w in
// repro's tar form with only the members its manifest.json names, and
// that manifest rewritten with no tags. Small members are held until the
// manifest is known (the engine writes it last); larger ones, the
// layers, are copied as they come.
func writeImageArchive(r io.Reader, w io.Writer) error {
	tr := tar.NewReader(bufio.NewReaderSize(r, 1<<20))
	tw := tarball.NewWriter(w)
	type member struct {
		name string
		b    []byte
	}
	var small []member
	var smallBytes int64
	var streamed []string
	for n := 0; ; n++ {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("the engine's image tarball: %w", err)
		}
		if n >= maxArchiveEntries {
			return fmt.Errorf("the engine's image tarball has more than %d entries", maxArchiveEntries)
		}
		name := path.Clean(h.Name)
		switch {
		case h.Typeflag == tar.TypeDir:
			continue
		case h.Typeflag != tar.TypeReg:
			return fmt.Errorf("the engine's image tarball holds %q of tar type %q", h.Name, h.Typeflag)
		case h.Size <= maxArchiveJSON && smallBytes+h.Size <= maxArchiveSmall:
			b, err := io.ReadAll(io.LimitReader(tr, h.Size))
			if err != nil {
				return err
			}
			smallBytes += int64(len(b))
			small = append(small, member{name, b})
		default:
			if err := tw.Add(name, h.Size, LayerTime, tr); err != nil {
				return err
			}
			streamed = append(streamed, name)
		}
	}
	var manifest []byte
	for _, m := range small {
		if m.name == "manifest.json" {
			manifest = m.b
		}
	}
	var ms []archiveManifest
	if err := strictjson.DecodeOpen(manifest, &ms); err != nil || len(ms) != 1 {
		return fmt.Errorf("the engine's image tarball has no manifest.json of one image (%v)", err)
	}
	// The manifest again, with only the fields the check reads and no
	// tags, whatever else this engine's version writes.
	canon := archiveManifest{Config: path.Clean(ms[0].Config)}
	named := map[string]bool{canon.Config: true}
	for _, l := range ms[0].Layers {
		canon.Layers = append(canon.Layers, path.Clean(l))
		named[path.Clean(l)] = true
	}
	for _, n := range streamed {
		if !named[n] {
			return fmt.Errorf("the engine's image tarball holds %q, which its manifest.json does not name", n)
		}
	}
	for _, m := range small {
		if named[m.name] {
			if err := tw.AddBytes(m.name, LayerTime, m.b); err != nil {
				return err
			}
		}
	}
	mb, err := json.Marshal([]archiveManifest{canon})
	if err != nil {
		return err
	}
	if err := tw.AddBytes("manifest.json", LayerTime, mb); err != nil {
		return err
	}
	return tw.Close()
}

// ArchiveError says an image archive is not the expected image;
// CheckImageArchive returns it wrapped as an exitcode.Integrity error.
type ArchiveError struct {
	Path   string
	Reason string
}

func (e *ArchiveError) Error() string {
	return fmt.Sprintf("the image archive %q is not the pinned image: %s", e.Path, e.Reason)
}

// archiveManifest is one entry of a docker-save manifest.json.
type archiveManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// CheckImageArchive reads the image archive at path (one SaveImage
// wrote; untrusted where it came from elsewhere) without the engine and
// checks that it is in repro's tar form (internal/tarball) and holds
// exactly one image whose configuration digest (the image ID) is wantID,
// whose configuration lists exactly the layer diff IDs wantLayers (when
// not nil), and whose every layer file, decompressed where it is gzip,
// has the diff ID the configuration lists for it; that manifest.json
// tags nothing (repro tags after the load: a tag in the archive would
// retag the engine's images); and that it holds no member manifest.json
// does not name (an OCI index.json, say, which an engine with the
// containerd image store loads instead). A mismatch is an *ArchiveError
// (exit 4); an archive that cannot be read, a *ArchiveError too.
func CheckImageArchive(archive, wantID string, wantLayers []string) error {
	bad := func(format string, a ...any) error {
		return exitcode.New(exitcode.Integrity, &ArchiveError{Path: archive, Reason: fmt.Sprintf(format, a...)})
	}
	f, err := safefile.OpenRegular(archive)
	if err != nil {
		return bad("cannot be opened: %v", err)
	}
	defer f.Close()
	small := map[string][]byte{} // members of at most maxArchiveJSON bytes
	var smallBytes int64
	diffs := map[string]string{} // member -> diff ID of its content
	var members []string
	tr := tarball.NewReader(bufio.NewReaderSize(f, 1<<20), archiveLimits)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return bad("not an image archive in repro's tar form: %v", err)
		}
		name := h.Name
		members = append(members, name)
		if h.Size <= maxArchiveJSON && smallBytes+h.Size <= maxArchiveSmall {
			// Small members (manifest, configuration, tiny layers) are
			// kept: which one is the configuration is known only later.
			b, err := io.ReadAll(tr)
			if err != nil {
				return bad("entry %q: %v", name, err)
			}
			smallBytes += int64(len(b))
			small[name] = b
			d, err := contentDigest(bytes.NewReader(b))
			if err != nil {
				return bad("entry %q: %v", name, err)
			}
			diffs[name] = d
			continue
		}
		d, err := contentDigest(tr)
		if err != nil {
			return bad("entry %q: %v", name, err)
		}
		diffs[name] = d
	}
	var ms []archiveManifest
	mb, ok := small["manifest.json"]
	if !ok {
		return bad("no manifest.json")
	}
	if err := strictjson.Decode(mb, &ms); err != nil {
		return bad("manifest.json: %v", err)
	}
	if len(ms) != 1 {
		return bad("manifest.json lists %d images, want 1", len(ms))
	}
	m := ms[0]
	if len(m.RepoTags) > 0 {
		return bad("manifest.json tags the image %q: repro saves images by ID and tags them itself, and loading these tags would retag the engine's images", m.RepoTags)
	}
	named := map[string]bool{"manifest.json": true, path.Clean(m.Config): true}
	for _, l := range m.Layers {
		named[path.Clean(l)] = true
	}
	for _, n := range members {
		switch {
		case named[n]:
		case n == "index.json":
			return bad("it holds an OCI index.json beside manifest.json: an engine with the containerd image store would load the images the index names, which were never checked")
		default:
			return bad("member %q is not named by manifest.json", n)
		}
	}
	cfg, ok := small[path.Clean(m.Config)]
	if !ok {
		return bad("the configuration %q is missing", m.Config)
	}
	if id := digest.Of(cfg).String(); id != wantID {
		return bad("it holds image %s, not %s", id, wantID)
	}
	var c struct {
		RootFS struct {
			Type    string   `json:"type"`
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := strictjson.DecodeOpen(cfg, &c); err != nil {
		return bad("the configuration: %v", err)
	}
	if wantLayers != nil && !slices.Equal(c.RootFS.DiffIDs, wantLayers) {
		return bad("its layers are %v, not %v", c.RootFS.DiffIDs, wantLayers)
	}
	if len(m.Layers) != len(c.RootFS.DiffIDs) {
		return bad("manifest.json lists %d layers, the configuration %d", len(m.Layers), len(c.RootFS.DiffIDs))
	}
	for i, l := range m.Layers {
		got, ok := diffs[path.Clean(l)]
		if !ok {
			return bad("layer %q is missing", l)
		}
		if got != c.RootFS.DiffIDs[i] {
			return bad("layer %q has content %s, not the configuration's %s", l, got, c.RootFS.DiffIDs[i])
		}
	}
	return nil
}

// contentDigest is the digest of r's bytes, decompressed first when they
// are gzip (the diff ID of a layer either way), bounded.
func contentDigest(r io.Reader) (string, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(2)
	var src io.Reader = br
	if bytes.Equal(head, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return "", err
		}
		zr.Multistream(false)
		src = zr
	}
	h := digest.NewHash()
	n, err := io.Copy(h, io.LimitReader(src, maxArchiveLayerSize+1))
	if err != nil {
		return "", err
	}
	if n > maxArchiveLayerSize {
		return "", fmt.Errorf("larger than %d bytes", int64(maxArchiveLayerSize))
	}
	return h.Digest().String(), nil
}

// LoadImage loads the image archive at path (one SaveImage wrote) into
// the engine as image want.ID.
// The tarball is checked first, without the engine (CheckImageArchive):
// exactly one image, whose configuration digest is want.ID and whose every
// layer has the diff ID the configuration lists. The engine cannot be
// left to check: it skips the layers of an image ID it already holds, so
// a tarball of the right ID with a replaced layer loads without error.
// Then the engine must hold want.ID. Every mismatch is exit 4 naming the
// tarball; nothing is loaded when the check fails. Callers that pin the
// layers pass them as layers (nil: any layers the configuration lists),
// and the one read of the tarball checks them too.
func (e *Engine) LoadImage(ctx context.Context, path string, want Image, layers []string) error {
	if err := CheckImageArchive(path, want.ID, layers); err != nil {
		return err
	}
	f, err := safefile.OpenRegular(path)
	if err != nil {
		return exitcode.Errorf(exitcode.Precondition, "image tarball %q: %v", path, err)
	}
	defer f.Close()
	resp, err := e.cli.ImageLoad(ctx, f, client.ImageLoadWithQuiet(true))
	if err != nil {
		return fmt.Errorf("failed to load the image tarball %q into the engine: %w", path, err)
	}
	body, err := io.ReadAll(io.LimitReader(resp, 1<<20))
	resp.Close()
	if err != nil {
		return fmt.Errorf("failed to load the image tarball %q into the engine: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		var msg struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&msg); err != nil {
			break
		}
		if msg.Error != "" {
			return exitcode.Errorf(exitcode.Integrity, "the engine refused the image tarball %q: %s", path, msg.Error)
		}
	}
	if err := e.verifyImage(ctx, want); err != nil {
		if exitcode.Of(err) == exitcode.Precondition {
			return exitcode.Errorf(exitcode.Integrity, "image tarball %q loaded, but the engine holds no image %s", path, want.ID)
		}
		return err
	}
	return nil
}

// TagImage tags the image with ID id as ref in the engine.
func (e *Engine) TagImage(ctx context.Context, id, ref string) error {
	if _, err := e.cli.ImageTag(ctx, client.ImageTagOptions{Source: id, Target: ref}); err != nil {
		return fmt.Errorf("failed to tag image %s as %s: %w", id, ref, err)
	}
	return nil
}
