package imagetrust

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/strictjson"
	"github.com/reprolab/repro/internal/tarball"
	"github.com/reprolab/repro/internal/trust"
)

// Members of an image bundle (a tar file in repro's form,
// internal/tarball), in the order Export writes them and Import requires,
// and the most bytes Import reads of each. The image comes last, so its
// signature is checked before any of it is read.
const (
	bundlePin       = "image.json"
	bundleSBOM      = "sbom.cdx.json"
	bundleSignature = "image.sig.dsse.json"
	bundleImage     = "image.tar"
)

var bundleOrder = []string{bundlePin, bundleSBOM, bundleSignature, bundleImage}

var bundleLimits = map[string]int64{
	bundlePin:       4 << 20,
	bundleSBOM:      32 << 20,
	bundleSignature: maxSignatureBytes,
	bundleImage:     16 << 30,
}

// bundleTar bounds the reading of a bundle: four members, the largest
// member's bound, and their sum plus headers in all.
var bundleTar = tarball.Limits{Entries: len(bundleOrder), EntrySize: 16 << 30, Bytes: 16<<30 + 64<<20, NameBytes: 64}

// Export writes the image pinned under home as one bundle at out: the pin,
// the SBOM, the image signature and the image as the engine saves it
// (Engine.SaveImage). The image must be signed (Sign) and the engine must
// hold it; the SBOM is checked against the pin. The file appears at out
// complete or not at all.
func Export(ctx context.Context, e *sandbox.Engine, home, out string) (*sandbox.Pin, error) {
	img, err := sandbox.PinnedImage(ctx, e, home)
	if err != nil {
		return nil, err
	}
	pin, err := sandbox.ReadPin(home)
	if err != nil {
		return nil, err
	}
	sb, err := sandbox.ImageSBOM(ctx, e, home, pin.SBOMTrees)
	if err != nil {
		return nil, err
	}
	pinBytes, err := safefile.ReadFile(layout.Home(home).ImagePin(), bundleLimits[bundlePin])
	if err != nil {
		return nil, err
	}
	sig, err := safefile.ReadFile(SignaturePath(home), maxSignatureBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, exitcode.Errorf(exitcode.Precondition, "the evaluator image is not signed (no %q): run 'repro image sign --key FILE' first", SignaturePath(home))
	}
	if err != nil {
		return nil, err
	}
	pred, _, err := decodeEnvelopeStatement(sig)
	if err != nil || pred.ImageID != img.ID || pred.SBOMDigest != sb.Digest.String() {
		return nil, exitcode.Errorf(exitcode.Precondition, "the signature %q is not for the pinned image and SBOM: run 'repro image sign --key FILE' again", SignaturePath(home))
	}
	// The engine's tarball has no size until it is written: stage it
	// beside the output.
	stage, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".image-*")
	if err != nil {
		return nil, fmt.Errorf("cannot write beside %q: %w", out, err)
	}
	defer os.Remove(stage.Name())
	defer stage.Close()
	bw := bufio.NewWriterSize(stage, 1<<20)
	if err := e.SaveImage(ctx, img.ID, bw); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	size, err := stage.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	if _, err := stage.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	err = atomicfile.Write(out, 0o644, func(w io.Writer) error {
		tw := tarball.NewWriter(w)
		for _, m := range []struct {
			name string
			b    []byte
		}{{bundlePin, pinBytes}, {bundleSBOM, sb.JSON}, {bundleSignature, sig}} {
			if err := tw.AddBytes(m.name, sandbox.LayerTime, m.b); err != nil {
				return err
			}
		}
		if err := tw.Add(bundleImage, size, sandbox.LayerTime, stage); err != nil {
			return err
		}
		return tw.Close()
	}, nil)
	if err != nil {
		return nil, err
	}
	return pin, nil
}

// decodeEnvelopeStatement reads the predicate of a signature envelope
// without checking the signature (Export's sanity check; VerifySignature
// is the check).
func decodeEnvelopeStatement(b []byte) (*Predicate, []byte, error) {
	var env struct {
		PayloadType string `json:"payloadType"`
		Payload     []byte `json:"payload"`
		Signatures  []any  `json:"signatures"`
	}
	if err := strictjson.Decode(b, &env); err != nil {
		return nil, nil, err
	}
	p, _, err := decodeStatement(env.Payload)
	return p, env.Payload, err
}

// Imported is what Import admitted.
type Imported struct {
	Pin       *sandbox.Pin `json:"pin"`
	Signature *Signed      `json:"signature"`
	TrustFile string       `json:"trust_file"`
	// Replaced is the image ID pinned before, if another.
	Replaced string `json:"replaced,omitempty"`
}

// Import admits the image bundle at bundle (made by Export, possibly on
// another machine) into home: only with a trust file (trustPath, or
// REPRO_HOME/trust.json) that lists a key for images, only when the
// bundle's signature is by such a key and names the bundle's image ID,
// manifest digest and SBOM digest, only when the SBOM has its pinned
// digest, and only when the image archive holds exactly that image ID and
// layer (checked before the engine sees it, and again after it loaded
// it). Then the pin, SBOM and signature replace home's. A refused bundle
// is an exitcode.Integrity error and changes nothing in home; no usable
// trust file is an exitcode.Precondition error.
func Import(ctx context.Context, e *sandbox.Engine, home, bundle, trustPath string, now time.Time) (*Imported, error) {
	tf, tpath, err := LoadTrust(home, trustPath)
	if err != nil {
		return nil, err
	}
	if tf == nil || len(tf.For(trust.Images)) == 0 {
		return nil, exitcode.Errorf(exitcode.Precondition, "importing an image needs a trust file that lists a key for %q (REPRO_HOME/trust.json or --trust FILE): an image built elsewhere is accepted only with a trusted signature", trust.Images)
	}
	sbx := layout.Home(home).Sandbox()
	if err := os.MkdirAll(sbx, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(sbx, ".import-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	ob, err := openBundle(bundle)
	if err != nil {
		return nil, err
	}
	defer ob.close()
	small := ob.small
	bad := func(format string, a ...any) error {
		return exitcode.Errorf(exitcode.Integrity, "the image bundle %q is refused: "+format, append([]any{bundle}, a...)...)
	}
	var pin sandbox.Pin
	if err := strictjson.Decode(small[bundlePin], &pin); err != nil {
		return nil, bad("its pin: %v", err)
	}
	for _, d := range []string{pin.ID, pin.ManifestDigest, pin.SBOMDigest, pin.LayerDigest} {
		if _, err := digest.Parse(d); err != nil || !strings.HasPrefix(d, "sha256:") {
			return nil, bad("its pin has a bad digest %q", d)
		}
	}
	if got := digest.Of(small[bundleSBOM]).String(); got != pin.SBOMDigest {
		return nil, bad("its SBOM has digest %s, not the pinned %s (a swapped SBOM)", got, pin.SBOMDigest)
	}
	sigPath := filepath.Join(tmp, bundleSignature)
	if err := os.WriteFile(sigPath, small[bundleSignature], 0o600); err != nil {
		return nil, err
	}
	signed, err := VerifySignature(tf, sigPath, pin.ID, pin.ManifestDigest, pin.SBOMDigest, now)
	if err != nil {
		return nil, bad("%v", err)
	}
	// The tag and the layer are taken only as signed.
	if pin.Reference != signed.Predicate.Reference || pin.LayerDigest != signed.Predicate.LayerDigest {
		return nil, bad("its pin names reference %q and layer %s, the signature %q and %s", pin.Reference, pin.LayerDigest, signed.Predicate.Reference, signed.Predicate.LayerDigest)
	}
	if !strings.HasPrefix(pin.Reference, sandbox.ImageRepository+":") {
		return nil, bad("its reference %q is not in %s", pin.Reference, sandbox.ImageRepository)
	}
	// Only now, signed, is the image read: onto disk, then checked
	// (LoadImage) before the engine sees it.
	archive := filepath.Join(tmp, bundleImage)
	if err := ob.unpackImage(archive); err != nil {
		return nil, err
	}
	if err := e.LoadImage(ctx, archive, pin.Image, []string{pin.LayerDigest}); err != nil {
		if exitcode.Of(err) == exitcode.Integrity {
			return nil, bad("%v", err)
		}
		return nil, err
	}
	if err := e.TagImage(ctx, pin.ID, pin.Reference); err != nil {
		return nil, err
	}
	im := &Imported{Pin: &pin, Signature: signed, TrustFile: tpath}
	if old, err := sandbox.ReadPin(home); err == nil && old.ID != pin.ID {
		im.Replaced = old.ID
	}
	h := layout.Home(home)
	for _, w := range []struct {
		path string
		b    []byte
	}{{h.ImageSBOM(), small[bundleSBOM]}, {h.ImageSignature(), small[bundleSignature]}, {h.ImagePin(), small[bundlePin]}} {
		if err := atomicfile.WriteFile(w.path, w.b, 0o644); err != nil {
			return nil, err
		}
	}
	return im, nil
}

// openedBundle is an image bundle read up to its image: the three small
// members held, the image member's header read, none of its bytes.
type openedBundle struct {
	path  string
	f     *os.File
	tr    *tarball.Reader
	small map[string][]byte
	image *tarball.Entry
}

func (b *openedBundle) bad(format string, a ...any) error {
	return exitcode.Errorf(exitcode.Integrity, "the image bundle %q is refused: "+format, append([]any{b.path}, a...)...)
}

func (b *openedBundle) close() { b.f.Close() }

// openBundle reads the bundle's members in Export's order: the pin, the
// SBOM and the signature, each a regular file within its bound, and the
// header of the image, which must come next. Anything else is refused.
func openBundle(bundle string) (*openedBundle, error) {
	f, err := safefile.OpenNamed(bundle)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot read the image bundle: %v", err)
	}
	b := &openedBundle{path: bundle, f: f, tr: tarball.NewReader(bufio.NewReaderSize(f, 1<<20), bundleTar), small: map[string][]byte{}}
	for _, want := range bundleOrder {
		h, err := b.tr.Next()
		if err == io.EOF {
			err = fmt.Errorf("member %q is missing", want)
		}
		if err != nil {
			f.Close()
			return nil, b.bad("not a tar file in repro's form: %v", err)
		}
		if h.Name != want {
			f.Close()
			if _, known := bundleLimits[h.Name]; known {
				return nil, b.bad("member %q where %q belongs (the order 'repro image export' writes: %s)", h.Name, want, strings.Join(bundleOrder, ", "))
			}
			return nil, b.bad("unexpected member %q (want %s)", h.Name, strings.Join(bundleOrder, ", "))
		}
		if h.Size > bundleLimits[want] {
			f.Close()
			return nil, b.bad("member %q is %d bytes, at most %d", want, h.Size, bundleLimits[want])
		}
		if want == bundleImage {
			b.image = h
			break
		}
		data, err := io.ReadAll(b.tr)
		if err != nil {
			f.Close()
			return nil, b.bad("member %q: %v", want, err)
		}
		b.small[want] = data
	}
	return b, nil
}

// unpackImage writes the image member to imagePath (atomically) and
// checks that the bundle ends after it.
func (b *openedBundle) unpackImage(imagePath string) error {
	err := atomicfile.Write(imagePath, 0o600, func(w io.Writer) error {
		_, err := io.CopyBuffer(w, b.tr, make([]byte, 1<<20))
		return err
	}, nil)
	if err != nil {
		return b.bad("member %q: %v", bundleImage, err)
	}
	if h, err := b.tr.Next(); err != io.EOF {
		if err == nil {
			err = fmt.Errorf("unexpected member %q after %q", h.Name, bundleImage)
		}
		return b.bad("%v", err)
	}
	return nil
}

// unpackBundle reads the whole bundle: the small members are returned,
// the image goes to imagePath.
func unpackBundle(bundle, imagePath string) (map[string][]byte, error) {
	b, err := openBundle(bundle)
	if err != nil {
		return nil, err
	}
	defer b.close()
	if err := b.unpackImage(imagePath); err != nil {
		return nil, err
	}
	return b.small, nil
}
