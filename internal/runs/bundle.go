package runs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/strictjson"
	"github.com/reprolab/repro/internal/tarball"
	"github.com/reprolab/repro/internal/trust"
)

// An evidence bundle is a tar file in repro's form (internal/tarball) of
// regular files, the record and its envelope first:
//
//	run/record.json          the record
//	run/record.dsse.json     its DSSE envelope (in-toto statement)
//	run/...                  every other file of the run folder
//	signer.pub               the signing key, PEM SubjectPublicKeyInfo
//	image/sbom.cdx.json      the evaluator image's SBOM, when the run used it
//	image/scan.dsse.json     the image's signed scan attestation, when present
//
// A bundle is untrusted input: ReadBundle reads only repro's tar form,
// within bounds on entries, sizes and name lengths, and refuses names
// outside this layout. It reads the record and its envelope first and
// checks the signature against the trust file before it reads anything
// else; every later run/ entry must be a file the signed record names, of
// at most the size it states, or the bundle is refused at that entry's
// header, before its data is read. What a bundle makes repro read and
// write is thus bounded by what a trusted key signed, plus at most
// maxSmallEntry for each of the record, its envelope, the SBOM and the
// scan, and maxSignerPub for signer.pub. A bundle whose record is not its
// first entry, or its envelope not its second, is refused: Export has
// always written them so.
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
	maxBundleBytes     = 1 << 38 // the whole file, headers included
	maxBundleName      = 1024
	maxSmallEntry      = 64 << 20 // record, envelope, SBOM, scan: held in memory
	maxSignerPub       = 64 << 10
)

var bundleLimits = tarball.Limits{Entries: maxBundleEntries, EntrySize: maxBundleEntrySize, Bytes: maxBundleBytes, NameBytes: maxBundleName}

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
	// Unread is why nothing after the record and its envelope was read:
	// they did not verify against the trust file. Nil when the whole
	// bundle was read.
	Unread error
}

// ReadBundle reads a tar evidence bundle from r, checking its record's
// signature against t before it reads any other entry, and hashing the
// run's files as it streams, holding only the small files. Any breach of
// the form, the layout or the bounds, and any run entry the signed record
// does not name with that size, is an error naming the entry. A record
// that does not verify stops the reading: Unread says why.
func ReadBundle(r io.Reader, t *trust.File) (*Bundle, error) { return readBundle(r, t, "") }

// readBundle is ReadBundle that also writes every entry's bytes, as they
// are hashed, under the folder out when out is not "" (a new, private
// folder: see ExtractBundle). The record and its envelope are written
// once they verify; signer.pub, the SBOM and the scan only when they are
// what the verified record names.
func readBundle(r io.Reader, t *trust.File, out string) (*Bundle, error) {
	tr := tarball.NewReader(r, bundleLimits)
	b := &Bundle{Files: map[string]File{}, Attestations: map[string][]byte{}}
	heads := []struct {
		name string
		into *[]byte
	}{{bundleRunDir + "/" + recordFile, &b.Record}, {bundleRunDir + "/" + envelopeFile, &b.Envelope}}
	for _, want := range heads {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("no %s (a bundle starts with its record and then its envelope)", want.name)
		}
		if err != nil {
			return nil, fmt.Errorf("not an evidence bundle in repro's tar form: %v", err)
		}
		if h.Name != want.name {
			return nil, fmt.Errorf("entry %q comes where %s must: a bundle starts with its record and then its envelope, and nothing else of it is read before they verify", h.Name, want.name)
		}
		if *want.into, err = readSmall(tr, h, maxSmallEntry); err != nil {
			return nil, err
		}
	}
	signed, err := authorize(b.Record, b.Envelope, t)
	if err != nil {
		b.Unread = err
		return b, nil
	}
	for _, e := range heads {
		if err := writeExtracted(out, e.name, *e.into); err != nil {
			return nil, err
		}
	}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not an evidence bundle in repro's tar form: %v", err)
		}
		if err := readBundleEntry(b, tr, h, out, signed); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// signedRun is what a bundle's verified record names: the size of every
// other file of the run by path, the record, and the key that signed.
type signedRun struct {
	sizes map[string]int64
	rec   *Record
	key   *trust.Key
	t     *trust.File
}

// authorize checks a bundle's record and envelope as evidence.check does
// (a signature by a key t trusts, over a statement whose predicate is the
// record and which names it), and returns what the record names. It
// decides only what else of the bundle is read; evidence.check decides
// whether the bundle verifies.
func authorize(record, envelope []byte, t *trust.File) (*signedRun, error) {
	rec, err := DecodeRecord(record)
	if err != nil {
		return nil, err
	}
	env, payload, err := decodeEnvelope(envelope, "")
	if err != nil {
		return nil, fmt.Errorf("%s: %v", envelopeFile, err)
	}
	s := &signedRun{sizes: map[string]int64{}, rec: rec, t: t}
	var names []string
	switch env.PayloadType {
	case PayloadType:
		st, err := parseStatement(payload)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", envelopeFile, err)
		}
		signedAt, err := predicateTime(st.predicate)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", envelopeFile, err)
		}
		if s.key, err = verifyTrusted(t, env, trust.RunRecords, signedAt); err != nil {
			return nil, fmt.Errorf("%s: %v", envelopeFile, err)
		}
		if st.subjects[recordFile] != digest.Of(record).Hex() || !st.samePredicate(record) {
			return nil, fmt.Errorf("%s differs from the signed statement", recordFile)
		}
		for _, n := range st.names() {
			if n != recordFile {
				names = append(names, n)
			}
		}
	case LegacyPayloadType:
		if !bytes.Equal(payload, record) {
			return nil, fmt.Errorf("%s differs from the signed payload", recordFile)
		}
		if s.key, err = verifyTrusted(t, env, trust.RunRecords, rec.FinishedAt); err != nil {
			return nil, fmt.Errorf("%s: %v", envelopeFile, err)
		}
		for _, f := range rec.Files {
			names = append(names, f.Path)
		}
	default:
		return nil, fmt.Errorf("%s: payload type %q, want %q", envelopeFile, env.PayloadType, PayloadType)
	}
	sizes := map[string]int64{}
	for _, f := range rec.Files {
		sizes[f.Path] = f.Size
	}
	for _, n := range names {
		size, ok := sizes[n]
		if !ok || size < 0 {
			return nil, fmt.Errorf("the signed record names %q without its size", n)
		}
		s.sizes[n] = size
	}
	return s, nil
}

// readSmall reads entry h, of at most max bytes, into memory.
func readSmall(tr *tarball.Reader, h *tarball.Entry, max int64) ([]byte, error) {
	if h.Size > max {
		return nil, fmt.Errorf("entry %q is %d bytes, at most %d", h.Name, h.Size, max)
	}
	data, err := io.ReadAll(tr)
	if err != nil {
		return nil, fmt.Errorf("entry %q: %v", h.Name, err)
	}
	return data, nil
}

// writeExtracted writes data as entry name under out (nothing when out
// is "").
func writeExtracted(out, name string, data []byte) (err error) {
	if out == "" {
		return nil
	}
	f, err := createExtracted(out, name)
	if err != nil {
		return &extractError{err}
	}
	_, err = f.Write(data)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &extractError{err}
	}
	return nil
}

// readBundleEntry reads entry h of a bundle, after its record and
// envelope, into b, and writes its bytes under out as they are hashed
// when out is not "". A run entry that signed does not name, or names
// with a smaller size, is refused from its header, unread.
func readBundleEntry(b *Bundle, tr *tarball.Reader, h *tarball.Entry, out string, signed *signedRun) error {
	name := h.Name
	img, _ := signed.rec.Image.(map[string]any)
	switch {
	case name == bundlePub:
		data, err := readSmall(tr, h, maxSignerPub)
		if err != nil {
			return err
		}
		b.SignerPub = data
		if pub, err := keys.ParsePublic(data); err == nil && keys.ID(pub) == signed.key.ID {
			return writeExtracted(out, name, data)
		}
		return nil
	case name == bundleSBOM:
		data, err := readSmall(tr, h, maxSmallEntry)
		if err != nil {
			return err
		}
		b.SBOM = data
		if want, _ := img["sbom_digest"].(string); want != "" && strings.TrimPrefix(want, "sha256:") == digest.Of(data).Hex() {
			return writeExtracted(out, name, data)
		}
		return nil
	case name == bundleScan:
		data, err := readSmall(tr, h, maxSmallEntry)
		if err != nil {
			return err
		}
		b.Scan = data
		if checkScan(signed.t, data, img) == nil {
			return writeExtracted(out, name, data)
		}
		return nil
	case !strings.HasPrefix(name, bundleRunDir+"/"):
		return fmt.Errorf("entry %q is not part of an evidence bundle (extra file)", name)
	}
	rel := strings.TrimPrefix(name, bundleRunDir+"/")
	size, ok := signed.sizes[rel]
	switch {
	case rel == recordFile || rel == envelopeFile:
		return fmt.Errorf("entry %q appears twice", name)
	case !ok:
		return fmt.Errorf("%s: file not in the signed record (refused before reading it)", name)
	case h.Size > size:
		return fmt.Errorf("entry %q is %d bytes, more than the %d the signed record states (refused before reading it)", name, h.Size, size)
	}
	if isAttestationFile(rel) {
		data, err := readSmall(tr, h, maxSmallEntry)
		if err != nil {
			return err
		}
		b.Attestations[rel] = data
		b.Files[rel] = File{Path: rel, SHA256: digest.Of(data).Hex(), Size: int64(len(data))}
		return writeExtracted(out, name, data)
	}
	var dst io.Writer = io.Discard
	var f *os.File
	if out != "" {
		var err error
		if f, err = createExtracted(out, name); err != nil {
			return &extractError{err}
		}
		defer f.Close()
		dst = extractWriter{f}
	}
	hw := digest.NewWriter(dst)
	if _, err := io.CopyBuffer(hw, tr, make([]byte, 1<<20)); err != nil {
		return fmt.Errorf("entry %q: %w", name, err)
	}
	if f != nil {
		if err := f.Sync(); err != nil {
			return &extractError{err}
		}
		if err := f.Close(); err != nil {
			return &extractError{err}
		}
	}
	sum, n := hw.Sum()
	b.Files[rel] = File{Path: rel, SHA256: sum.Hex(), Size: n}
	return nil
}

// extractError is a failure to write an extracted file (not a fault of
// the bundle).
type extractError struct{ err error }

func (e *extractError) Error() string { return e.err.Error() }

// extractWriter marks write errors as extractErrors.
type extractWriter struct{ f *os.File }

func (w extractWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		err = &extractError{err}
	}
	return n, err
}

// createExtracted creates the file for entry name (a clean relative path,
// as the bundle reader checked) under out, a folder only this process
// writes to.
func createExtracted(out, name string) (*os.File, error) {
	p := filepath.Join(out, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
}

// VerifyBundle checks the evidence bundle at path (a path the user named)
// against t, as VerifyWith checks a run folder, and also checks that
// signer.pub is the key that signed, that the SBOM is the one the record
// names, and that a scan attestation is signed by a trusted key and names
// the record's image. A malformed bundle and every problem are
// exitcode.Integrity errors.
func VerifyBundle(p string, t *trust.File) (*Verification, error) {
	return verifyBundle(context.Background(), p, t, "")
}

// VerifyBundleContext is VerifyBundle that stops within one read (at most
// 1 MiB) once ctx is done, with an Interrupted error.
func VerifyBundleContext(ctx context.Context, p string, t *trust.File) (*Verification, error) {
	return verifyBundle(ctx, p, t, "")
}

// ExtractBundle checks the evidence bundle at path p as VerifyBundle does
// and, only when it verifies, leaves its files (run/..., signer.pub,
// image/...) in the folder dir: the bytes that were hashed and checked,
// written as they were read, and nothing else. dir must not exist or be
// an empty folder (else an exitcode.Usage error); the files are written
// into a new folder beside it that replaces dir once the bundle verifies,
// and that is removed when it does not, so dir is never left partly
// written.
func ExtractBundle(p string, t *trust.File, dir string) (*Verification, error) {
	return ExtractBundleContext(context.Background(), p, t, dir)
}

// ExtractBundleContext is ExtractBundle that stops within one read (at
// most 1 MiB) once ctx is done, with an Interrupted error, removing what
// it had written.
func ExtractBundleContext(ctx context.Context, p string, t *trust.File, dir string) (*Verification, error) {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 || err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, exitcode.Errorf(exitcode.Usage, "cannot extract into %q: it must be a new or an empty folder", dir)
	}
	parent := filepath.Dir(filepath.Clean(dir))
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".extract-")
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "cannot extract into %q: %v", dir, err)
	}
	defer os.RemoveAll(tmp)
	v, err := verifyBundle(ctx, p, t, tmp)
	if err != nil {
		return v, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return v, err
	}
	// rename(2) replaces an empty folder (os.Rename refuses to).
	if err := syscall.Rename(tmp, dir); err != nil {
		return v, fmt.Errorf("cannot move the extracted bundle into %q: %v", dir, err)
	}
	return v, atomicfile.SyncDir(parent)
}

func verifyBundle(ctx context.Context, p string, t *trust.File, out string) (*Verification, error) {
	f, err := safefile.OpenNamed(p)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "cannot read bundle %q: %v", p, err)
	}
	defer f.Close()
	dr := digest.NewReader(digest.ContextReader(ctx, f))
	b, err := readBundle(bufio.NewReaderSize(dr, 1<<20), t, out)
	if err == nil && b.Unread == nil {
		// The reader refuses anything but zero padding after the end
		// marker; what it left unread is that padding.
		if _, cerr := io.Copy(io.Discard, dr); cerr != nil {
			err = cerr
		}
	}
	if ctx.Err() != nil {
		return nil, Interrupted(ctx, fmt.Sprintf("bundle %q", p))
	}
	var xe *extractError
	if errors.As(err, &xe) {
		return nil, fmt.Errorf("cannot extract bundle %q: %v", p, xe.err)
	}
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %q: %v", p, err)
	}
	ev := evidence{name: fmt.Sprintf("bundle %q", p), record: b.Record, envelope: b.Envelope, files: b.Files, attestations: b.Attestations}
	v, err := ev.check(t)
	if v == nil {
		return nil, err
	}
	if b.Unread != nil {
		// Nothing past the envelope was read: the check above names why
		// the record does not verify, and the bundle is refused unread.
		v.add("", "not read past its record: %v", b.Unread)
		return v, v.verdict(ev.name)
	}
	v.BundleSHA256, _ = dr.Sum()
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
	if err := strictjson.DecodeOpen(payload, &st); err != nil {
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
	return ExportContext(context.Background(), home, id, out)
}

// ExportContext is Export that stops within one read (at most 1 MiB)
// once ctx is done, with an Interrupted error, writing nothing to out.
func ExportContext(ctx context.Context, home, id, out string) (*Verification, error) {
	r, err := Open(home, id)
	if err != nil {
		return nil, err
	}
	t, err := LoadTrust(home, "")
	if err != nil {
		return nil, err
	}
	v, err := r.VerifyWithContext(ctx, t)
	if ctx.Err() != nil {
		return nil, Interrupted(ctx, "run "+r.ID)
	}
	if err != nil {
		return v, fmt.Errorf("%w; not exporting it", err)
	}
	files, err := folderFiles(ctx, r.Dir)
	if ctx.Err() != nil {
		return nil, Interrupted(ctx, "run "+r.ID)
	}
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
		tw := tarball.NewWriter(w)
		for _, e := range entries {
			if e.data != nil {
				if err := tw.AddBytes(e.name, mtime, e.data); err != nil {
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
			var src = digest.ContextReader(ctx, f)
			if e.want != nil {
				want, err := digest.Parse(e.want.SHA256)
				if err != nil {
					f.Close()
					return err
				}
				src = digest.NewVerifier(src, e.name, e.want.Size, want)
			}
			err = tw.Add(e.name, fi.Size(), mtime, src)
			f.Close()
			if err != nil {
				return err
			}
		}
		return tw.Close()
	}, nil)
	if err != nil && ctx.Err() != nil {
		return nil, Interrupted(ctx, "run "+r.ID)
	}
	if err != nil {
		return v, fmt.Errorf("cannot write bundle %q: %v", out, err)
	}
	return v, nil
}
