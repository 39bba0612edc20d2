package pickle

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/reprolab/repro/internal/digest"
)

// MaxInputSize is the largest input Scan and Convert read (8 GiB): above
// the largest EDM checkpoint (about 1.2 GB) with room to spare.
const MaxInputSize = 8 << 30

// Verdict is the outcome of a scan.
type Verdict string

const (
	// Clean: well-formed and inside the profile.
	Clean Verdict = "clean"
	// Rejected: well-formed but outside the profile.
	Rejected Verdict = "rejected"
	// Malformed: not a well-formed pickle or torch file, or beyond the
	// decoder's limits.
	Malformed Verdict = "malformed"
)

// Report is what a scan found. Offsets are byte offsets in the input.
type Report struct {
	Size       int64         `json:"size"`
	SHA256     digest.SHA256 `json:"sha256"`
	Profile    string        `json:"profile"`
	Verdict    Verdict       `json:"verdict"`
	Error      string        `json:"error,omitempty"` // the malformation, when Verdict is Malformed
	Violations []Violation   `json:"violations"`
	Format     string        `json:"format"`   // pickle, torch-zip or torch-legacy; "" if undetermined
	Protocol   int           `json:"protocol"` // of the main pickle
	// Opcodes counts the opcodes of the file's own pickles;
	// NestedOpcodes those inside nested torch files.
	Opcodes       []OpcodeCount     `json:"opcodes"`
	NestedOpcodes []OpcodeCount     `json:"nested_opcodes"`
	Globals       []GlobalUse       `json:"globals"`
	Blobs         []Blob            `json:"nested_blobs"`
	Storages      []StorageInfo     `json:"storages"` // of a top-level torch file
	Sources       []Source          `json:"embedded_sources"`
	Classes       []PersistentClass `json:"persistent_classes"`
	Tensors       []TensorInfo      `json:"tensors"`
	TensorBytes   int64             `json:"tensor_bytes"` // of the listed tensors
	// ElidedRepeats counts containers reached again through shared
	// references: the listing walks each once, so tensors inside appear
	// under their first path only. TensorsUnlisted counts tensors beyond
	// the listing's cap of 65536.
	ElidedRepeats   int64 `json:"elided_repeats"`
	TensorsUnlisted int64 `json:"tensors_unlisted"`

	err error
}

// Err returns nil for a clean verdict, a *PolicyError for a rejected one
// and a *MalformedError (or *InternalError) for a malformed one.
func (r *Report) Err() error { return r.err }

// OpcodeCount is how often an opcode occurs.
type OpcodeCount struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// GlobalUse is a global the file names, and how often.
type GlobalUse struct {
	Name    string `json:"name"`
	Count   int64  `json:"count"`
	Allowed bool   `json:"allowed"`
}

// Blob is a torch file nested in a pickle (torch.storage._load_from_bytes).
type Blob struct {
	Offset  int64       `json:"offset"`
	Size    int64       `json:"size"`
	Format  string      `json:"format"`
	Storage StorageInfo `json:"storage"`
}

// StorageInfo describes a storage and where its bytes are.
type StorageInfo struct {
	Key      string `json:"key"`
	DType    string `json:"dtype"`
	Numel    int64  `json:"numel"`
	Location string `json:"location"`
	Offset   int64  `json:"data_offset"`
}

func storageInfo(st *Storage) StorageInfo {
	return StorageInfo{Key: st.Key, DType: st.DType.Name, Numel: st.Numel, Location: st.Location, Offset: st.Offset}
}

// Source is an embedded module source (persistent classes), identified by
// the SHA-256 of its UTF-8 text.
type Source struct {
	SHA256  digest.SHA256 `json:"sha256"`
	Size    int           `json:"size"`
	Classes []string      `json:"classes"`
	Text    string        `json:"-"`
	seen    map[string]bool
}

// PersistentClass counts the persistent objects of one class.
type PersistentClass struct {
	Class        string        `json:"class"`
	Version      int64         `json:"version"`
	SourceSHA256 digest.SHA256 `json:"source_sha256"`
	Count        int           `json:"count"`
}

// TensorInfo describes a tensor reachable from the top-level value, named
// by its path (modules by their state_dict names).
type TensorInfo struct {
	Name          string  `json:"name"`
	DType         string  `json:"dtype"`
	Shape         []int64 `json:"shape"`
	Strides       []int64 `json:"strides"`
	StorageOffset int64   `json:"storage_offset"`
	Contiguous    bool    `json:"contiguous"`
	Bytes         int64   `json:"bytes"`
	DataOffset    int64   `json:"data_offset"` // of the storage's bytes in the input
}

// session is one decode of one input: the profile, the budget and what
// the report collects.
type session struct {
	profile     *Profile
	strict      bool // stop at the first violation
	root        []byte
	budget      int64
	budgetTotal int64
	violations  []Violation
	opCounts    [2][256]int64
	depth       int // of nested torch files
	globals     map[string]*GlobalUse
	blobs       []Blob
	blobCache   map[*Bytes]*Storage
	storages    []*Storage
	srcDigests  map[strKey]digest.SHA256
	sources     map[digest.SHA256]*Source
	classes     map[string]*PersistentClass
	format      string
	protocol    int
}

func newSession(p *Profile, data []byte, strict bool) *session {
	budget := int64(len(data)) + baseBudget
	return &session{
		profile: p, strict: strict, root: data, budget: budget, budgetTotal: budget,
		globals:    make(map[string]*GlobalUse),
		blobCache:  make(map[*Bytes]*Storage),
		srcDigests: make(map[strKey]digest.SHA256),
		sources:    make(map[digest.SHA256]*Source),
		classes:    make(map[string]*PersistentClass),
	}
}

func (s *session) violate(off int64, reason string) error {
	if len(s.violations) < maxViolations {
		s.violations = append(s.violations, Violation{Offset: off, Reason: reason})
	}
	if s.strict || len(s.violations) >= maxViolations {
		return &PolicyError{Profile: s.profile.Name, Violations: append([]Violation(nil), s.violations...)}
	}
	return nil
}

// maxExport bounds the contiguous bytes of one tensor and of all exported
// tensors: expanded views (stride 0) may legitimately be larger than their
// storage, but not without limit.
func (s *session) maxExport() int64 { return 2*int64(len(s.root)) + 1<<20 }

func (s *session) countOp(op byte) { s.opCounts[min(s.depth, 1)][op]++ }

func (s *session) recordGlobal(name string, allowed bool) {
	g := s.globals[name]
	if g == nil {
		g = &GlobalUse{Name: name, Allowed: allowed}
		s.globals[name] = g
	}
	g.Count++
}

func (s *session) recordPersistent(p *Persistent) {
	src := s.sources[p.SourceSHA256]
	if src == nil {
		src = &Source{SHA256: p.SourceSHA256, Size: len(p.ModuleSrc), Text: p.ModuleSrc, seen: map[string]bool{}}
		s.sources[p.SourceSHA256] = src
	}
	if !src.seen[p.ClassName] {
		src.seen[p.ClassName] = true
		src.Classes = append(src.Classes, p.ClassName)
	}
	key := fmt.Sprintf("%s\x00%d\x00%x", p.ClassName, p.Version, p.SourceSHA256)
	c := s.classes[key]
	if c == nil {
		c = &PersistentClass{Class: p.ClassName, Version: p.Version, SourceSHA256: p.SourceSHA256}
		s.classes[key] = c
	}
	c.Count++
}

// decode runs the whole decode: container, pickles, nested files and the
// profile's structure checks. It never panics; a decoder bug comes back as
// an *InternalError.
func (s *session) decode() (root Value, export []NamedTensor, err error) {
	defer func() {
		if p := recover(); p != nil {
			root, export, err = nil, nil, &InternalError{Panic: p}
		}
	}()
	root, err = s.decodeTop(s.root)
	if err != nil {
		return nil, nil, err
	}
	export, err = s.checkRoot(root)
	return root, export, err
}

// checkRoot applies the profile's root rule and collects the tensors a
// conversion exports, in state_dict order.
func (s *session) checkRoot(root Value) ([]NamedTensor, error) {
	p := s.profile
	w := &walker{unique: true, inputSize: len(s.root)}
	var werr error
	classOK := func(name string) bool { return p.Root.Classes == nil || contains(p.Root.Classes, name) }
	switch p.Root.Kind {
	case "snapshot":
		d, ok := root.(*Dict)
		if !ok {
			return nil, s.violate(-1, fmt.Sprintf("top-level value is a %s, not a dict", typeName(root)))
		}
		v, ok := d.Get(p.Root.Export)
		if !ok {
			return nil, s.violate(-1, fmt.Sprintf("top-level dict has no %q entry", p.Root.Export))
		}
		per, ok := v.(*Persistent)
		if !ok {
			return nil, s.violate(-1, fmt.Sprintf("%q is a %s, not a persistent module", p.Root.Export, typeName(v)))
		}
		if !classOK(per.ClassName) {
			return nil, s.violate(-1, fmt.Sprintf("%q is a %s, not one of %v", p.Root.Export, per.ClassName, p.Root.Classes))
		}
		werr = w.stateDict(per, "", 0)
	case "module":
		if per, ok := root.(*Persistent); ok && !classOK(per.ClassName) {
			return nil, s.violate(-1, fmt.Sprintf("top-level module is a %s, not one of %v", per.ClassName, p.Root.Classes))
		}
		werr = w.stateDict(root, "", 0)
	case "state-dict":
		werr = w.mapping(root)
	}
	if werr != nil {
		return nil, s.violate(-1, "cannot export a state_dict: "+werr.Error())
	}
	if len(w.out) == 0 {
		return nil, s.violate(-1, "nothing to export: no tensors")
	}
	for _, t := range w.out {
		if reason := safetensorsNameProblem(t); reason != "" {
			if err := s.violate(-1, reason); err != nil {
				return nil, err
			}
		}
	}
	if err := s.checkInitArgs(root); err != nil {
		return nil, err
	}
	var total int64
	for _, t := range w.out {
		if total += t.NumBytes(); total > s.maxExport() {
			return nil, &MalformedError{Offset: -1, Msg: fmt.Sprintf("exported tensors exceed the decoder's output limit of %d bytes", s.maxExport())}
		}
	}
	return w.out, nil
}

// checkInitArgs requires the exported persistent module's recorded
// constructor arguments to have an inert JSON form, so that a scan rejects
// what a conversion could not describe.
func (s *session) checkInitArgs(root Value) error {
	mod := root
	if s.profile.Root.Kind == "snapshot" {
		mod, _ = root.(*Dict).Get(s.profile.Root.Export)
	}
	per, ok := mod.(*Persistent)
	if !ok {
		return nil
	}
	st, _ := per.State.(*Dict)
	for _, k := range []string{"_init_args", "_init_kwargs"} {
		if v, ok := st.Get(k); ok {
			if _, err := InertJSON(v); err != nil {
				if err := s.violate(-1, fmt.Sprintf("%s of %s: %v", k, per.ClassName, err)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// ReadAll reads exactly size bytes from r, refusing inputs larger than
// MaxInputSize and sources that hold more than size bytes.
func ReadAll(r io.ReaderAt, size int64) ([]byte, error) {
	if size < 0 || size > MaxInputSize {
		return nil, fmt.Errorf("input of %d bytes is outside 0..%d", size, int64(MaxInputSize))
	}
	data := make([]byte, size)
	if n, err := r.ReadAt(data, 0); n != len(data) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("failed to read input: %w", err)
	}
	var one [1]byte
	if n, _ := r.ReadAt(one[:], size); n != 0 {
		return nil, fmt.Errorf("input is longer than its stated size of %d bytes", size)
	}
	return data, nil
}

// Scan reads size bytes from r and scans them with ScanBytes. The error is
// only about reading; the verdict is in the report.
func Scan(r io.ReaderAt, size int64, p *Profile) (*Report, error) {
	data, err := ReadAll(r, size)
	if err != nil {
		return nil, err
	}
	return ScanBytes(data, p), nil
}

// ScanBytes decodes data statically against profile p, executing nothing,
// and reports what the file holds and the verdict. Decoding continues past
// violations (up to a limit) so that the report lists them all; it stops at
// the first malformation. data must not change while the report is in use.
func ScanBytes(data []byte, p *Profile) *Report {
	sum := hashAsync(data)
	s := newSession(p, data, false)
	root, _, err := s.decode()
	r := s.report(err)
	if root != nil {
		w := &walker{listing: true, inputSize: len(data)}
		if werr := w.all(root, "", 0); werr != nil {
			s.violate(-1, "cannot list tensors: "+werr.Error())
			r = s.report(err)
		}
		r.Tensors, r.TensorBytes = tensorInfos(w.out)
		r.ElidedRepeats, r.TensorsUnlisted = w.elided, w.unlisted
	}
	r.SHA256 = <-sum
	return r
}

func hashAsync(data []byte) <-chan digest.SHA256 {
	c := make(chan digest.SHA256, 1)
	go func() { c <- digest.Of(data) }()
	return c
}

func tensorInfos(ts []NamedTensor) ([]TensorInfo, int64) {
	out := make([]TensorInfo, len(ts))
	var total int64
	for i, t := range ts {
		out[i] = TensorInfo{
			Name: t.Name, DType: t.DType.Name, Shape: t.Shape, Strides: t.Strides,
			StorageOffset: t.StorageOffset, Contiguous: t.Contiguous(), Bytes: t.NumBytes(),
			DataOffset: t.Storage.Offset,
		}
		total += t.NumBytes()
	}
	return out, total
}

// report assembles the report; err is the decode's error, if any.
func (s *session) report(err error) *Report {
	r := &Report{
		Size: int64(len(s.root)), Profile: s.profile.Name, Format: s.format, Protocol: s.protocol,
		Violations: append([]Violation{}, s.violations...),
	}
	// The first problem decides the verdict, as it decides where a strict
	// decode (Convert) stops: violations found before a malformation make
	// the file rejected; the malformation is still reported.
	var pe *PolicyError
	switch {
	case err == nil && len(s.violations) == 0:
		r.Verdict = Clean
	case len(s.violations) > 0:
		r.Verdict = Rejected
		r.err = &PolicyError{Profile: s.profile.Name, Violations: r.Violations}
		if err != nil && !errors.As(err, &pe) {
			r.Error = err.Error()
		}
	default:
		r.Verdict, r.Error, r.err = Malformed, err.Error(), err
	}
	r.Opcodes, r.NestedOpcodes = opCounts(&s.opCounts[0]), opCounts(&s.opCounts[1])
	r.Globals = []GlobalUse{}
	for _, k := range sortedStrings(s.globals) {
		r.Globals = append(r.Globals, *s.globals[k])
	}
	r.Blobs = append([]Blob{}, s.blobs...)
	r.Storages = []StorageInfo{}
	for _, st := range s.storages {
		r.Storages = append(r.Storages, storageInfo(st))
	}
	r.Sources = []Source{}
	for _, src := range s.sources {
		r.Sources = append(r.Sources, *src)
	}
	sort.Slice(r.Sources, func(i, j int) bool { return r.Sources[i].SHA256.Hex() < r.Sources[j].SHA256.Hex() })
	r.Classes = []PersistentClass{}
	for _, k := range sortedStrings(s.classes) {
		r.Classes = append(r.Classes, *s.classes[k])
	}
	r.Tensors = []TensorInfo{}
	return r
}

func opCounts(c *[256]int64) []OpcodeCount {
	out := []OpcodeCount{}
	for op, n := range c {
		if n > 0 {
			out = append(out, OpcodeCount{Name: opTable[op].name, Count: n})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Name < out[j].Name
	})
	return out
}
