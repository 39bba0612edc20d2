package pickle

import (
	"encoding/json"
	"io"
	"os"

	"github.com/reprolab/repro/internal/digest"
)

// ConfigFormat identifies the JSON written next to converted tensors.
const ConfigFormat = "repro.pickle.config/v1"

// Model is the result of a conversion: the exported module's state_dict
// and what is needed to rebuild the module from pinned source.
type Model struct {
	// Tensors are in state_dict order, named as state_dict() names them.
	// Their bytes alias the input until written.
	Tensors []NamedTensor
	Config  Config
	Report  *Report
}

// Config describes a converted file. For an EDM snapshot NetworkClass and
// InitKwargs are what EDM's persistence recorded for the exported network
// ("ema"): the constructor call that rebuilds it from vendored code.
type Config struct {
	Format  string   `json:"format"`
	Profile string   `json:"profile"`
	Asset   AssetRef `json:"asset"`
	// NetworkClass is the exported module's class name ("" for a plain
	// state_dict); NetworkSourceSHA256 the SHA-256 of the module source
	// embedded for it.
	NetworkClass        string        `json:"network_class,omitempty"`
	NetworkSourceSHA256 digest.SHA256 `json:"network_source_sha256,omitzero"`
	PersistenceVersion  int64         `json:"persistence_version,omitempty"`
	// InitArgs and InitKwargs are the recorded constructor arguments as
	// inert JSON (see InertJSON); null when not recorded.
	InitArgs   json.RawMessage `json:"init_args"`
	InitKwargs json.RawMessage `json:"init_kwargs"`
	// Sources are all module sources embedded in the file.
	Sources      []Source `json:"embedded_sources"`
	TensorCount  int      `json:"tensor_count"`
	ElementCount int64    `json:"element_count"`
	TensorBytes  int64    `json:"tensor_bytes"`
}

// AssetRef pins the converted input.
type AssetRef struct {
	SHA256 digest.SHA256 `json:"sha256"`
	Size   int64         `json:"size"`
	Format string        `json:"format"`
}

// Convert reads size bytes from r and converts them with ConvertBytes.
func Convert(r io.ReaderAt, size int64, p *Profile) (*Model, error) {
	data, err := ReadAll(r, size)
	if err != nil {
		return nil, err
	}
	return ConvertBytes(data, p)
}

// ConvertBytes decodes data statically against profile p, executing
// nothing, and returns the exported module's tensors and config. It stops at
// the first violation: the error is a *PolicyError (outside the profile), a
// *MalformedError (not a well-formed file) or an *InternalError. data must
// not change until the tensors are written.
func ConvertBytes(data []byte, p *Profile) (*Model, error) {
	return convert(data, p, hashAsync(data))
}

// ConvertVerified is ConvertBytes for bytes whose SHA-256 the caller has
// just verified (for example against a catalog pin while reading them): sum
// is recorded as the asset digest instead of hashing data again. A wrong sum
// makes a wrong config; pass only a digest checked over these very bytes.
func ConvertVerified(data []byte, sum digest.SHA256, p *Profile) (*Model, error) {
	c := make(chan digest.SHA256, 1)
	c <- sum
	return convert(data, p, c)
}

func convert(data []byte, p *Profile, sum <-chan digest.SHA256) (*Model, error) {
	s := newSession(p, data, true)
	root, export, err := s.decode()
	r := s.report(err)
	r.SHA256 = <-sum
	if err == nil && r.err != nil {
		err = r.err
	}
	if err != nil {
		return &Model{Report: r}, err
	}
	r.Tensors, r.TensorBytes = tensorInfos(export)
	m := &Model{Tensors: export, Report: r}
	c := &m.Config
	c.Format, c.Profile = ConfigFormat, p.Name
	c.Asset = AssetRef{SHA256: r.SHA256, Size: r.Size, Format: r.Format}
	c.Sources = r.Sources
	c.InitArgs, c.InitKwargs = json.RawMessage("null"), json.RawMessage("null")
	var mod Value = root
	if p.Root.Kind == "snapshot" {
		mod, _ = root.(*Dict).Get(p.Root.Export) // checked by checkRoot
	}
	if per, ok := mod.(*Persistent); ok {
		c.NetworkClass, c.NetworkSourceSHA256, c.PersistenceVersion = per.ClassName, per.SourceSHA256, per.Version
		st, _ := per.State.(*Dict)
		if a, ok := st.Get("_init_args"); ok {
			if c.InitArgs, err = InertJSON(a); err != nil {
				return s.reject(r, "constructor arguments: "+err.Error())
			}
		}
		if kw, ok := st.Get("_init_kwargs"); ok {
			if c.InitKwargs, err = InertJSON(kw); err != nil {
				return s.reject(r, "constructor keyword arguments: "+err.Error())
			}
		}
	} else if o, ok := mod.(*Object); ok && o.Class != nil {
		c.NetworkClass = o.Class.String()
	}
	c.TensorCount = len(export)
	for _, t := range export {
		c.ElementCount += t.Numel()
		c.TensorBytes += t.NumBytes()
	}
	return m, nil
}

// reject turns a clean report into a rejected one for a problem found
// while building the config.
func (s *session) reject(r *Report, reason string) (*Model, error) {
	s.violations = append(s.violations, Violation{Offset: -1, Reason: reason})
	err := &PolicyError{Profile: s.profile.Name, Violations: append([]Violation(nil), s.violations...)}
	r.Verdict, r.Violations, r.err = Rejected, err.Violations, err
	return &Model{Report: r}, err
}

// Metadata is the safetensors __metadata__ written for the model.
func (m *Model) Metadata() map[string]string {
	return map[string]string{
		"format":             "pt",
		"repro.profile":      m.Config.Profile,
		"repro.asset_sha256": m.Config.Asset.SHA256.Hex(),
	}
}

// WriteSafetensors writes the tensors in safetensors format to w.
func (m *Model) WriteSafetensors(w io.Writer) (int64, error) {
	return EncodeSafetensors(w, m.Tensors, m.Metadata())
}

// WriteSafetensorsFile writes the tensors atomically to path (see
// WriteSafetensorsFile) and returns the file's digest and size.
func (m *Model) WriteSafetensorsFile(path string, perm os.FileMode) (digest.SHA256, int64, error) {
	return WriteSafetensorsFile(path, perm, m.Tensors, m.Metadata())
}

// ConfigJSON returns the config as indented JSON.
func (m *Model) ConfigJSON() ([]byte, error) {
	b, err := json.MarshalIndent(&m.Config, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
