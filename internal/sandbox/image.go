package sandbox

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/reprolab/repro/internal/safefile"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/moby/moby/client"
	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/strictjson"
)

// Image identifies the evaluator image. ID is the engine's image ID (the
// digest of the image configuration); ManifestDigest is the digest of the
// image manifest as written to the tarball loaded into the engine.
//
// Only an Image returned by PinnedImage or BuildImage can be run: the
// runner refuses one made any other way (a literal, a decoded record), so
// that no run uses an image other than the pinned one.
type Image struct {
	ID             string `json:"id"`
	ManifestDigest string `json:"manifest_digest"`
	// SBOMDigest is the SHA-256 of the image's SBOM (see ImageSBOM).
	SBOMDigest string `json:"sbom_digest,omitempty"`
	pinned     bool
}

// The Debian release, variant and packages of the evaluator image.
const (
	ImageSuite = "bookworm"
	// ImageOSVEcosystem is the OSV ecosystem of ImageSuite's packages.
	ImageOSVEcosystem = "Debian:12"
	ImageVariant      = "minbase"
	// ImageRepository is the name the image is tagged with in the engine;
	// runs always use the ID, never the tag.
	ImageRepository = "reprolab/evaluator"
)

// ImagePackages are the packages added to Debian's minimal base: the
// Python interpreter for repro's harness, and NumPy and psutil, the only
// imports of EvalPlus's scoring core (`repro score --engine evalplus`).
var ImagePackages = []string{"python3", "python3-numpy", "python3-psutil"}

// Pin is what `repro image build` stores under REPRO_HOME.
type Pin struct {
	Image
	Reference   string       `json:"reference"`
	LayerDigest string       `json:"layer_digest"` // SHA-256 of the uncompressed layer (the diff ID)
	LayerSize   int64        `json:"layer_size"`
	Suite       string       `json:"suite"`
	Variant     string       `json:"variant"`
	Mirror      string       `json:"mirror"`
	Included    []string     `json:"included"`
	Packages    []string     `json:"packages"` // name=version of every installed package
	Layer       *LayerReport `json:"layer"`
	BuiltAt     time.Time    `json:"built_at"`
	// SBOMTrees are the trees the SBOM lists besides the packages, and
	// SBOMPackages the number of Debian packages it lists.
	SBOMTrees    []SBOMTree `json:"sbom_trees,omitempty"`
	SBOMPackages int        `json:"sbom_packages,omitempty"`
}

// BuildOptions tune BuildImage.
type BuildOptions struct {
	Mirror   string     // Debian mirror; when empty, the host's apt sources name it
	AptDir   string     // where to read the apt sources; HostAptDir when empty
	Fresh    bool       // bootstrap again even if a cached layer exists
	Progress io.Writer  // debootstrap's output and steps; may be nil
	Trees    []SBOMTree // trees the SBOM lists besides the packages (the harness)
}

func sandboxDir(home string) string { return layout.Home(home).Sandbox() }
func pinPath(home string) string    { return layout.Home(home).ImagePin() }
func cacheDir(home string) string   { return layout.Home(home).ImageCache() }

// layerMeta describes the cached layer tarball.
type layerMeta struct {
	Digest   string       `json:"digest"`
	Size     int64        `json:"size"`
	Mirror   string       `json:"mirror"`
	Included []string     `json:"included"` // ImagePackages when the layer was made
	Packages []string     `json:"packages"`
	Layer    *LayerReport `json:"layer"`
}

// BuildImage makes the evaluator image offline from Debian packages:
// debootstrap a minimal bookworm with python3, turn the tree into one
// deterministic layer, assemble the image with go-containerregistry, load
// it into the engine, and pin its ID and manifest digest under home. The
// layer is cached under home and reused (after checking its digest) unless
// opts.Fresh is set.
func BuildImage(ctx context.Context, e *Engine, home string, opts BuildOptions) (Image, error) {
	if opts.Mirror != "" {
		if err := CheckMirror(opts.Mirror); err != nil {
			return Image{}, exitcode.New(exitcode.Usage, err)
		}
	}
	if opts.AptDir == "" {
		opts.AptDir = HostAptDir
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	if err := os.MkdirAll(cacheDir(home), 0o700); err != nil {
		return Image{}, fmt.Errorf("failed to create the image cache: %w", err)
	}
	layerPath := filepath.Join(cacheDir(home), "layer.tar")
	metaPath := filepath.Join(cacheDir(home), "layer.json")
	var meta *layerMeta
	if !opts.Fresh {
		m, err := cachedLayer(layerPath, metaPath)
		if err == nil {
			fmt.Fprintf(progress, "using the cached layer %s\n", m.Digest)
			meta = m
		} else if !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(progress, "ignoring the cached layer: %v\n", err)
		}
	}
	if meta == nil {
		mirror := opts.Mirror
		if mirror == "" {
			m, err := hostMirror(opts.AptDir)
			if err != nil {
				return Image{}, err
			}
			mirror = m
		}
		fmt.Fprintf(progress, "debian mirror %s\n", mirror)
		m, err := bootstrapLayer(ctx, home, mirror, layerPath, metaPath, progress)
		if err != nil {
			return Image{}, err
		}
		meta = m
	}
	img, ref, err := assembleImage(layerPath)
	if err != nil {
		return Image{}, err
	}
	fmt.Fprintf(progress, "loading %s into the engine\n", ref)
	if err := loadImage(ctx, e, ref, img, cacheDir(home)); err != nil {
		return Image{}, err
	}
	id, err := img.ConfigName()
	if err != nil {
		return Image{}, err
	}
	md, err := img.Digest()
	if err != nil {
		return Image{}, err
	}
	image := Image{ID: id.String(), ManifestDigest: md.String()}
	got, err := e.cli.ImageInspect(ctx, image.ID)
	if err != nil {
		return Image{}, fmt.Errorf("the engine did not keep the loaded image %s: %w", image.ID, err)
	}
	if got.ID != image.ID {
		return Image{}, exitcode.Errorf(exitcode.Integrity, "the engine reports image ID %s for the image built as %s", got.ID, image.ID)
	}
	pin := Pin{
		Image: image, Reference: ref.String(), LayerDigest: meta.Digest, LayerSize: meta.Size,
		Suite: ImageSuite, Variant: ImageVariant, Mirror: meta.Mirror, Included: ImagePackages,
		Packages: meta.Packages, Layer: meta.Layer, BuiltAt: time.Now().UTC().Truncate(time.Second),
	}
	want, err := digest.Parse(meta.Digest)
	if err != nil {
		return Image{}, err
	}
	lf, err := safefile.OpenRegular(layerPath)
	if err != nil {
		return Image{}, err
	}
	status, err := verifiedLayerStatus(lf, want, layerPath)
	lf.Close()
	if err != nil {
		return Image{}, err
	}
	sbom, err := writeSBOM(home, &pin, status, opts.Trees)
	if err != nil {
		return Image{}, err
	}
	fmt.Fprintf(progress, "SBOM %s (%d packages) in %s\n", sbom.Digest, sbom.Packages, SBOMPath(home))
	image.SBOMDigest = sbom.Digest.String()
	image.pinned = true
	return image, nil
}

func cachedLayer(layerPath, metaPath string) (*layerMeta, error) {
	b, err := safefile.ReadFile(metaPath, 4<<20)
	if err != nil {
		return nil, err
	}
	var m layerMeta
	if err := strictjson.DecodeOpen(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", metaPath, err)
	}
	want, err := digest.Parse(m.Digest)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", metaPath, err)
	}
	got, n, err := digest.File(layerPath)
	if err != nil {
		return nil, err
	}
	if got != want || n != m.Size {
		return nil, &digest.MismatchError{What: layerPath, WantSize: m.Size, GotSize: n, WantDigest: want, GotDigest: got}
	}
	if !slices.Equal(m.Included, ImagePackages) {
		return nil, fmt.Errorf("it was made with packages %v, not %v", m.Included, ImagePackages)
	}
	return &m, nil
}

// bootstrapLayer runs debootstrap into a fresh folder under home and writes
// the layer tarball and its description.
func bootstrapLayer(ctx context.Context, home, mirror, layerPath, metaPath string, progress io.Writer) (*layerMeta, error) {
	if os.Geteuid() != 0 {
		return nil, exitcode.Errorf(exitcode.Precondition, "building the evaluator image needs root (debootstrap creates device nodes and owners); run 'repro image build' as root")
	}
	deboot, err := exec.LookPath("debootstrap")
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "debootstrap is not installed: apt-get install debootstrap")
	}
	rootfs, err := os.MkdirTemp(cacheDir(home), "rootfs-")
	if err != nil {
		return nil, err
	}
	defer removeRootfs(rootfs)
	args := []string{"--variant=" + ImageVariant, "--include=" + strings.Join(ImagePackages, ","), ImageSuite, rootfs, mirror}
	fmt.Fprintf(progress, "debootstrap %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, deboot, args...)
	cmd.Stdout, cmd.Stderr = progress, progress
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "SOURCE_DATE_EPOCH=" + strconv.FormatInt(LayerTime.Unix(), 10), "DEBIAN_FRONTEND=noninteractive"}
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("debootstrap failed (see its output above): %w", err)
	}
	pkgs, err := installedPackages(filepath.Join(rootfs, "var/lib/dpkg/status"))
	if err != nil {
		return nil, err
	}
	tmp := layerPath + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp)
	bw := bufio.NewWriterSize(f, 1<<20)
	hw := digest.NewWriter(bw)
	rep, err := writeLayer(rootfs, hw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	d, n := hw.Sum()
	if err := os.Rename(tmp, layerPath); err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "layer %s (%d bytes, %d entries, %d setuid/setgid bits removed)\n", d, n, rep.Entries, len(rep.Stripped))
	meta := &layerMeta{Digest: d.String(), Size: n, Mirror: mirror, Included: ImagePackages, Packages: pkgs, Layer: rep}
	b, _ := json.MarshalIndent(meta, "", "  ")
	if err := atomicfile.WriteFile(metaPath, append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	return meta, nil
}

// assembleImage makes a single-layer image from the layer tarball, with a
// fixed configuration and creation time.
func assembleImage(layerPath string) (v1.Image, name.Tag, error) {
	layer, err := tarball.LayerFromFile(layerPath, tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		return nil, name.Tag{}, fmt.Errorf("failed to read the image layer: %w", err)
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: LayerTime}, CreatedBy: "repro image build: debootstrap --variant=" + ImageVariant + " " + ImageSuite + " + " + strings.Join(ImagePackages, " ")},
	})
	if err != nil {
		return nil, name.Tag{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, name.Tag{}, err
	}
	cf = cf.DeepCopy()
	cf.Architecture = runtime.GOARCH
	cf.OS = "linux"
	cf.Created = v1.Time{Time: LayerTime}
	_, holder := users()
	cf.Config = v1.Config{
		Env:        []string{"PATH=" + baseEnv["PATH"], "LANG=C.UTF-8"},
		Cmd:        []string{"/usr/bin/python3"},
		User:       holder,
		WorkingDir: "/",
		Labels:     map[string]string{"org.reprolab.repro.image": "evaluator"},
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, name.Tag{}, err
	}
	id, err := img.ConfigName()
	if err != nil {
		return nil, name.Tag{}, err
	}
	tag, err := name.NewTag(ImageRepository + ":" + id.Hex[:12])
	if err != nil {
		return nil, name.Tag{}, err
	}
	return img, tag, nil
}

// loadImage writes the image as a docker-format tarball (Docker 20.10
// cannot load OCI layouts) and loads it into the engine.
func loadImage(ctx context.Context, e *Engine, ref name.Tag, img v1.Image, dir string) error {
	f, err := os.CreateTemp(dir, "image-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := tarball.Write(ref, img, bw); err != nil {
		return fmt.Errorf("failed to write the image tarball: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return e.loadTar(ctx, f)
}

// loadTar loads a docker-format image tarball into the engine.
func (e *Engine) loadTar(ctx context.Context, r io.Reader) error {
	resp, err := e.cli.ImageLoad(ctx, r, client.ImageLoadWithQuiet(true))
	if err != nil {
		return fmt.Errorf("failed to load the image into the engine: %w", err)
	}
	defer resp.Close()
	body, err := io.ReadAll(io.LimitReader(resp, 1<<20))
	if err != nil {
		return fmt.Errorf("failed to load the image into the engine: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		var msg struct {
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&msg); err != nil {
			break
		}
		if msg.Error != "" {
			return fmt.Errorf("the engine refused the image: %s", msg.Error)
		}
	}
	return nil
}

// ReadPin reads the pin stored by BuildImage under home.
func ReadPin(home string) (*Pin, error) {
	b, err := safefile.ReadFile(pinPath(home), 4<<20)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, exitcode.Errorf(exitcode.Precondition, "no evaluator image is pinned in %s: run 'repro image build'", sandboxDir(home))
		}
		return nil, exitcode.Errorf(exitcode.Precondition, "failed to read the evaluator image pin: %v", err)
	}
	var p Pin
	if err := strictjson.DecodeOpen(b, &p); err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "the evaluator image pin %s is corrupt: %v", pinPath(home), err)
	}
	for _, d := range []string{p.ID, p.ManifestDigest} {
		if _, err := digest.Parse(d); err != nil || !strings.HasPrefix(d, "sha256:") {
			return nil, exitcode.Errorf(exitcode.Integrity, "the evaluator image pin %s is corrupt: bad digest %q", pinPath(home), d)
		}
	}
	return &p, nil
}

// PinnedImage returns the pinned evaluator image after checking that the
// engine holds exactly that image ID. No pin, or an engine without the
// image, is an exitcode.Precondition error; a tag that now names another
// image is an exitcode.Integrity error.
func PinnedImage(ctx context.Context, e *Engine, home string) (Image, error) {
	p, err := ReadPin(home)
	if err != nil {
		return Image{}, err
	}
	if err := e.verifyImage(ctx, p.Image); err != nil {
		return Image{}, err
	}
	if p.Reference != "" {
		got, err := e.cli.ImageInspect(ctx, p.Reference)
		if err != nil && !cerrdefs.IsNotFound(err) {
			return Image{}, fmt.Errorf("failed to inspect %s: %w", p.Reference, err)
		}
		if err == nil && got.ID != p.ID {
			return Image{}, exitcode.Errorf(exitcode.Integrity, "%s names image %s, not the pinned %s: run 'repro image build' again", p.Reference, got.ID, p.ID)
		}
	}
	img := p.Image
	img.pinned = true
	return img, nil
}

// installedPackages lists "name=version" of every installed package in a
// dpkg status file, sorted.
func installedPackages(statusPath string) ([]string, error) {
	b, err := safefile.ReadFile(statusPath, 64<<20)
	if err != nil {
		return nil, fmt.Errorf("failed to read the package list: %w", err)
	}
	return parseDpkgStatus(b), nil
}

// parseDpkgStatus returns "name=version" for each stanza whose Status ends
// in "installed".
func parseDpkgStatus(b []byte) []string {
	var out []string
	for _, stanza := range strings.Split(string(b), "\n\n") {
		var pkg, ver, status string
		for _, line := range strings.Split(stanza, "\n") {
			k, v, ok := strings.Cut(line, ": ")
			if !ok {
				continue
			}
			switch k {
			case "Package":
				pkg = strings.TrimSpace(v)
			case "Version":
				ver = strings.TrimSpace(v)
			case "Status":
				status = strings.TrimSpace(v)
			}
		}
		if pkg != "" && ver != "" && strings.HasSuffix(status, " installed") {
			out = append(out, pkg+"="+ver)
		}
	}
	sort.Strings(out)
	return out
}

// removeRootfs unmounts anything debootstrap left mounted below dir (it
// mounts /proc and /sys while installing) and removes the tree.
func removeRootfs(dir string) {
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		var targets []string
		for _, line := range strings.Split(string(mi), "\n") {
			f := strings.Fields(line)
			if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
				targets = append(targets, f[4])
			}
		}
		sort.Sort(sort.Reverse(sort.StringSlice(targets)))
		for _, t := range targets {
			syscall.Unmount(t, syscall.MNT_DETACH)
		}
	}
	os.RemoveAll(dir)
}

// OpenPinned connects to the engine and returns it with the image pinned
// under home (exit 3 when either is missing, 4 when the engine's image
// differs from the pin), with the digest of the image's SBOM (made now,
// listing trees besides the packages, for a pin that has none; exit 4 when
// the stored SBOM differs from its pinned digest). Its containers run
// under the runtime ConnectChosen picks from the settings of home,
// runtimeFlag ("" for none) and the engine's runc. The caller closes the
// engine.
// It does not apply the trust file's image policy: sandboxed runs open
// the image through imagetrust.Open, which does.
func OpenPinned(ctx context.Context, home string, trees []SBOMTree, runtimeFlag string) (*Engine, Image, error) {
	e, err := ConnectChosen(ctx, home, runtimeFlag)
	if err != nil {
		return nil, Image{}, err
	}
	img, err := PinnedImage(ctx, e, home)
	if err != nil {
		e.Close()
		return nil, Image{}, err
	}
	sbom, err := ImageSBOM(ctx, e, home, trees)
	if err != nil {
		e.Close()
		return nil, Image{}, err
	}
	img.SBOMDigest = sbom.Digest.String()
	return e, img, nil
}
