package runs

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/trust"
)

// An evidence bundle is a tar file of regular files (folder entries are
// allowed and ignored; nothing else is):
//
//	run/record.json          the record
//	run/record.dsse.json     its DSSE envelope (in-toto statement)
//	run/...                  every other file of the run folder
//	signer.pub               the signing key, PEM SubjectPublicKeyInfo
//	image/sbom.cdx.json      the evaluator image's SBOM, when the run used it
//	image/scan.dsse.json     the image's signed scan attestation, when present
//
// A bundle is untrusted input: ReadBundle bounds entry counts, sizes and
// name lengths, refuses links, devices, names outside this layout, names
// that are not clean relative paths, and duplicates.
const (
	bundleRunDir = "run"
	bundlePub    = "signer.pub"
	bundleSBOM   = "image/sbom.cdx.json"
	bundleScan   = "image/scan.dsse.json"
)

// Bounds on a bundle.
const (
	maxBundleEntries   = 1 << 17
	maxBundleEntrySize = 1 << 36 // 64 GiB, streamed and hashed, never held
	maxBundleBytes     = 1 << 38
	maxBundleName      = 1024
	maxSmallEntry      = 64 << 20 // record, envelope, SBOM, scan: held in memory
)

// Bundle is a read and checked-for-shape evidence bundle.
type Bundle struct {
	Record   []byte
	Envelope []byte
	// Files are the run's other files by path inside the run folder.
	Files map[string]File
	// SignerPub, SBOM and Scan are nil when absent.
	SignerPub []byte
	SBOM      []byte
	Scan      []byte
	// Attestations holds the run's standard attestation files (also in
	// Files) by path inside the run folder.
	Attestations map[string][]byte
}

// ReadBundle reads a tar evidence bundle from r, hashing the run's files
// as it streams and holding only the small files. Any breach of the
// layout or the bounds is an error naming the entry.
func ReadBundle(r io.Reader) (*Bundle, error) {
	tr := tar.NewReader(r)
	b := &Bundle{Files: map[string]File{}, Attestations: map[string][]byte{}}
	seen := map[string]bool{}
	var entries int
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not a readable tar file: %v", err)
		}
		entries++
		if entries > maxBundleEntries {
			return nil, fmt.Errorf("more than %d entries", maxBundleEntries)
		}
		name := h.Name
		if len(name) > maxBundleName || !utf8.ValidString(name) {
			return nil, fmt.Errorf("entry name %.80q is longer than %d bytes or not UTF-8", name, maxBundleName)
		}
		if h.Typeflag == tar.TypeDir {
			dir := strings.TrimSuffix(name, "/")
			if !cleanRel(dir) || !(dir == bundleRunDir || dir == "image" || strings.HasPrefix(dir, bundleRunDir+"/")) {
				return nil, fmt.Errorf("entry %q: folder outside the bundle layout", name)
			}
			continue
		}
		if h.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("entry %q is not a regular file (tar type %q); bundles hold only regular files", name, h.Typeflag)
		}
		if !cleanRel(name) {
			return nil, fmt.Errorf("entry %q is not a clean relative path", name)
		}
		if seen[name] {
			return nil, fmt.Errorf("entry %q appears twice", name)
		}
		seen[name] = true
		if h.Size < 0 || h.Size > maxBundleEntrySize {
			return nil, fmt.Errorf("entry %q has size %d, at most %d", name, h.Size, int64(maxBundleEntrySize))
		}
		if total += h.Size; total > maxBundleBytes {
			return nil, fmt.Errorf("entries larger than %d bytes in all", int64(maxBundleBytes))
		}
		small := func() ([]byte, error) {
			if h.Size > maxSmallEntry {
				return nil, fmt.Errorf("entry %q is %d bytes, at most %d", name, h.Size, maxSmallEntry)
			}
			data, err := io.ReadAll(io.LimitReader(tr, h.Size))
			if err != nil {
				return nil, fmt.Errorf("entry %q: %v", name, err)
			}
			return data, nil
		}
		switch {
		case name == bundleRunDir+"/"+recordFile:
			b.Record, err = small()
		case name == bundleRunDir+"/"+envelopeFile:
			b.Envelope, err = small()
		case name == bundlePub:
			b.SignerPub, err = small()
		case name == bundleSBOM:
			b.SBOM, err = small()
		case name == bundleScan:
			b.Scan, err = small()
		case strings.HasPrefix(name, bundleRunDir+"/") && isAttestationFile(strings.TrimPrefix(name, bundleRunDir+"/")):
			rel := strings.TrimPrefix(name, bundleRunDir+"/")
			var data []byte
			if data, err = small(); err == nil {
				b.Attestations[rel] = data
				b.Files[rel] = File{Path: rel, SHA256: digest.Of(data).Hex(), Size: int64(len(data))}
			}
		case strings.HasPrefix(name, bundleRunDir+"/"):
			rel := strings.TrimPrefix(name, bundleRunDir+"/")
			sum, n, herr := digest.ReaderFrom(io.LimitReader(tr, h.Size))
			if herr != nil || n != h.Size {
				return nil, fmt.Errorf("entry %q: truncated (%d of %d bytes): %v", name, n, h.Size, herr)
			}
			b.Files[rel] = File{Path: rel, SHA256: sum.Hex(), Size: n}
		default:
			return nil, fmt.Errorf("entry %q is not part of an evidence bundle (extra file)", name)
		}
		if err != nil {
			return nil, err
		}
	}
	if b.Record == nil {
		return nil, fmt.Errorf("no %s/%s", bundleRunDir, recordFile)
	}
	return b, nil
}

// cleanRel reports whether p is a clean, relative, slash-separated path
// without "." or ".." elements.
func cleanRel(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || path.Clean(p) != p {
		return false
	}
	for _, e := range strings.Split(p, "/") {
		if e == "." || e == ".." || e == "" {
			return false
		}
	}
	return true
}

// VerifyBundle checks the evidence bundle at path (a path the user named)
// against t, as VerifyWith checks a run folder, and also checks that
// signer.pub is the key that signed, that the SBOM is the one the record
// names, and that a scan attestation is signed by a trusted key and names
// the record's image. A malformed bundle and every problem are
// exitcode.Integrity errors.
func VerifyBundle(p string, t *trust.File) (*Verification, error) {
	f, err := safefile.OpenNamed(p)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "cannot read bundle %q: %v", p, err)
	}
	defer f.Close()
	b, err := ReadBundle(f)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %q: %v", p, err)
	}
	ev := evidence{name: fmt.Sprintf("bundle %q", p), record: b.Record, envelope: b.Envelope, files: b.Files, attestations: b.Attestations}
	v, err := ev.check(t)
	if v == nil {
		return nil, err
	}
	switch pub, err := keys.ParsePublic(b.SignerPub); {
	case b.SignerPub == nil:
		v.add(bundlePub, "missing")
	case err != nil:
		v.add(bundlePub, "%v", err)
	case v.Key != nil && keys.ID(pub) != v.Key.ID:
		v.add(bundlePub, "is key %s, but the record was signed by %q (%s)", keys.ID(pub), v.Key.Name, v.Key.ID)
	}
	img, _ := v.Record.Image.(map[string]any)
	if b.SBOM != nil {
		want, _ := img["sbom_digest"].(string)
		if got := digest.Of(b.SBOM); want == "" || strings.TrimPrefix(want, "sha256:") != got.Hex() {
			v.add(bundleSBOM, "sha256 %s is not the SBOM the record names (%q)", got.Hex(), want)
		}
	}
	if b.Scan != nil {
		if err := checkScan(t, b.Scan, img); err != nil {
			v.add(bundleScan, "%v", err)
		}
	}
	return v, v.verdict(ev.name)
}

// checkScan verifies a scan attestation: signed by a key t trusts for run
// records at its scan time, about the image the record names.
func checkScan(t *trust.File, envBytes []byte, img map[string]any) error {
	env, payload, err := decodeEnvelope(envBytes, PayloadType)
	if err != nil {
		return err
	}
	var st struct {
		Predicate struct {
			ImageID   string    `json:"image_id"`
			ScannedAt time.Time `json:"scanned_at"`
		} `json:"predicate"`
	}
	if err := json.Unmarshal(payload, &st); err != nil {
		return fmt.Errorf("not a scan statement: %v", err)
	}
	if _, err := verifyTrusted(t, env, trust.RunRecords, st.Predicate.ScannedAt); err != nil {
		return err
	}
	if id, _ := img["id"].(string); id == "" || id != st.Predicate.ImageID {
		return fmt.Errorf("is a scan of image %q, the run used %q", st.Predicate.ImageID, id)
	}
	return nil
}

// Export writes run id of home as an evidence bundle to out (atomically),
// after checking the run against home's trust file: a run that does not
// verify is not exported. It returns the verification.
func Export(home, id, out string) (*Verification, error) {
	r, err := Open(home, id)
	if err != nil {
		return nil, err
	}
	t, err := LoadTrust(home, "")
	if err != nil {
		return nil, err
	}
	v, err := r.VerifyWith(t)
	if err != nil {
		return v, fmt.Errorf("%w; not exporting it", err)
	}
	files, err := folderFiles(r.Dir)
	if err != nil {
		return v, err
	}
	mtime := v.Record.FinishedAt.UTC().Truncate(time.Second)
	type entry struct {
		name, src string
		data      []byte
		want      *File
	}
	var entries []entry
	for _, n := range []string{recordFile, envelopeFile} {
		entries = append(entries, entry{name: bundleRunDir + "/" + n, src: filepath.Join(r.Dir, n)})
	}
	for i := range files {
		entries = append(entries, entry{name: bundleRunDir + "/" + files[i].Path, src: filepath.Join(r.Dir, filepath.FromSlash(files[i].Path)), want: &files[i]})
	}
	entries = append(entries, entry{name: bundlePub, data: keys.MarshalPublic(v.Key.Public())})
	if img, ok := v.Record.Image.(map[string]any); ok {
		if want, _ := img["sbom_digest"].(string); want != "" {
			sb, err := safefile.ReadFile(layout.Home(home).ImageSBOM(), maxSmallEntry)
			if err == nil && strings.TrimPrefix(want, "sha256:") == digest.Of(sb).Hex() {
				entries = append(entries, entry{name: bundleSBOM, data: sb})
			}
		}
		if sc, err := safefile.ReadFile(layout.Home(home).ImageScan(), maxSmallEntry); err == nil && checkScan(t, sc, img) == nil {
			entries = append(entries, entry{name: bundleScan, data: sc})
		}
	}
	err = atomicfile.Write(out, 0o644, func(w io.Writer) error {
		tw := tar.NewWriter(w)
		for _, e := range entries {
			if e.data != nil {
				if err := writeEntry(tw, e.name, mtime, int64(len(e.data)), strings.NewReader(string(e.data))); err != nil {
					return err
				}
				continue
			}
			f, err := safefile.OpenRegular(e.src)
			if err != nil {
				return err
			}
			fi, err := f.Stat()
			if err != nil {
				f.Close()
				return err
			}
			var src io.Reader = f
			if e.want != nil {
				want, err := digest.Parse(e.want.SHA256)
				if err != nil {
					f.Close()
					return err
				}
				src = digest.NewVerifier(f, e.name, e.want.Size, want)
			}
			err = writeEntry(tw, e.name, mtime, fi.Size(), src)
			f.Close()
			if err != nil {
				return err
			}
		}
		return tw.Close()
	}, nil)
	if err != nil {
		return v, fmt.Errorf("cannot write bundle %q: %v", out, err)
	}
	return v, nil
}

func writeEntry(tw *tar.Writer, name string, mtime time.Time, size int64, r io.Reader) error {
	h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o644, ModTime: mtime, Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	n, err := io.Copy(tw, r)
	if err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	if n != size {
		return fmt.Errorf("%s changed while it was exported", name)
	}
	return nil
}
