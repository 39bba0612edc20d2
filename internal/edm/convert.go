package edm

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/pickle"
	"github.com/reprolab/repro/internal/store"
	"golang.org/x/sys/unix"
)

// ConvertFormat identifies the config.json that Convert writes.
const ConvertFormat = "repro.edm.convert/v1"

// preconditioners are the network classes an EDM checkpoint may export;
// --safe rebuilds them from training/networks.py of the pinned source.
var preconditioners = map[string]bool{"EDMPrecond": true, "VPPrecond": true, "VEPrecond": true, "iDDPMPrecond": true}

// convertible says which profile converts a catalog id: a model's
// checkpoint or a detector some model uses.
func convertible(id string) (profile string, kind catalog.Kind, err error) {
	for _, m := range models {
		switch id {
		case m.Checkpoint:
			return pickle.ProfileEDMCheckpoint, catalog.Checkpoint, nil
		case m.Detector:
			return pickle.ProfileInceptionDetector, catalog.Detector, nil
		}
	}
	_, err = LookupModel(id)
	return "", "", err
}

// ConvertRecord describes one conversion of a pinned pickle to safetensors.
type ConvertRecord struct {
	ID                string        `json:"id"`
	Kind              catalog.Kind  `json:"kind"`
	Asset             digest.SHA256 `json:"asset_sha256"`
	AssetSize         int64         `json:"asset_size"`
	Class             string        `json:"class"`
	SourceSHA256      digest.SHA256 `json:"network_source_sha256,omitzero"`
	SafetensorsSHA256 digest.SHA256 `json:"safetensors_sha256"`
	SafetensorsSize   int64         `json:"safetensors_size"`
	Tensors           int           `json:"tensors"`
	// SourceMatchesPin reports, for a checkpoint, whether the networks.py
	// embedded in it is byte for byte the one in the pinned EDM source
	// (the catalog fact networks_py_sha256 of edm-source).
	SourceMatchesPin *bool `json:"source_matches_pin,omitempty"`
}

// ConvertConfig is config.json: the record, the pins it relied on and the
// decoder's own description of the network.
type ConvertConfig struct {
	Format      string        `json:"format"`
	Record      ConvertRecord `json:"conversion"`
	Safetensors string        `json:"safetensors"`
	EDMSource   *sourcePin    `json:"edm_source,omitempty"`
	Network     pickle.Config `json:"network"`
	Converted   time.Time     `json:"converted"`
}

type sourcePin struct {
	ID               string `json:"id"`
	NetworksPySHA256 string `json:"networks_py_sha256,omitempty"`
	Commit           string `json:"commit,omitempty"`
}

// ConvertResult says what Convert wrote.
type ConvertResult struct {
	Record      ConvertRecord `json:"conversion"`
	Dir         string        `json:"dir"`
	Safetensors string        `json:"safetensors"`
	Config      string        `json:"config"`
}

// converted is a decoded asset, ready to write.
type converted struct {
	entry  catalog.Entry
	model  *pickle.Model
	record ConvertRecord
	source *sourcePin
}

// decodeAsset converts the sealed bytes of a pinned asset with the given
// profile, executing nothing, and checks that the decoder hashed exactly
// the pinned bytes.
func decodeAsset(e catalog.Entry, s *store.Sealed, profile string, cat *catalog.Catalog) (*converted, error) {
	p, err := pickle.LookupProfile(profile)
	if err != nil {
		return nil, err
	}
	m, err := pickle.Convert(s.ReaderAt(), s.Size, p)
	if err != nil {
		return nil, exitcode.New(exitcode.Integrity, fmt.Errorf("asset %s (pinned, sha256:%s) cannot be converted safely: %w", e.ID, s.SHA256.Hex(), err))
	}
	if m.Config.Asset.SHA256 != *e.SHA256 || m.Config.Asset.Size != e.Size {
		return nil, exitcode.Errorf(exitcode.Integrity, "asset %s: the decoder read bytes with sha256 %s, pinned %s", e.ID, m.Config.Asset.SHA256.Hex(), e.SHA256.Hex())
	}
	c := &converted{entry: e, model: m, record: ConvertRecord{
		ID: e.ID, Kind: e.Kind, Asset: *e.SHA256, AssetSize: e.Size,
		Class: m.Config.NetworkClass, SourceSHA256: m.Config.NetworkSourceSHA256, Tensors: len(m.Tensors),
	}}
	if e.Kind == catalog.Checkpoint {
		if !preconditioners[c.record.Class] {
			return nil, exitcode.Errorf(exitcode.Integrity, "asset %s exports a %q, not an EDM preconditioner", e.ID, c.record.Class)
		}
		if src, err := cat.Lookup(SourceID); err == nil {
			c.source = &sourcePin{ID: SourceID, NetworksPySHA256: src.Facts["networks_py_sha256"], Commit: src.Facts["commit"]}
			match := src.IsPinned() && c.source.NetworksPySHA256 == c.record.SourceSHA256.Hex()
			c.record.SourceMatchesPin = &match
		}
	}
	return c, nil
}

// Convert reads the catalog asset id (an EDM checkpoint, by its model id,
// or a detector that a model uses) from the store as sealed verified bytes,
// converts it with internal/pickle's static decoder (no pickle code runs)
// and writes model.safetensors and config.json, each atomically, to
// StateDir("edm")/<id>/<sha256 of the asset>/. The tensors are the
// exported network's state_dict (for a checkpoint, its "ema" network).
//
// An unpinned entry is an exitcode.Precondition error returned before the
// store is read; a missing blob is exitcode.Precondition; bytes that differ
// from the pin, or that the profile refuses, are exitcode.Integrity.
func Convert(ctx context.Context, st *store.Store, id string) (*ConvertResult, error) {
	profile, _, err := convertible(id)
	if err != nil {
		return nil, err
	}
	e, err := st.Catalog().Lookup(id)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "the catalog has no entry %s", id)
	}
	if err := e.RequirePinned(); err != nil {
		return nil, err
	}
	s, err := st.OpenSealed(ctx, id)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := decodeAsset(e, s, profile, st.Catalog())
	if err != nil {
		return nil, err
	}
	state, err := st.StateDir("edm")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(state, id, e.SHA256.Hex())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	res := &ConvertResult{Dir: dir, Safetensors: filepath.Join(dir, "model.safetensors"), Config: filepath.Join(dir, "config.json")}
	sum, n, err := c.model.WriteSafetensorsFile(res.Safetensors, 0o600)
	if err != nil {
		return nil, err
	}
	c.record.SafetensorsSHA256, c.record.SafetensorsSize = sum, n
	cfg := ConvertConfig{Format: ConvertFormat, Record: c.record, Safetensors: "model.safetensors",
		EDMSource: c.source, Network: c.model.Config, Converted: time.Now().UTC()}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(res.Config, append(b, '\n'), 0o600); err != nil {
		return nil, err
	}
	res.Record = c.record
	return res, nil
}

// runtimeConversion holds sealed memory files with networks converted for
// one --safe run.
type runtimeConversion struct {
	files   []*os.File
	net     *converted
	det     *converted
	netFile *sealedBytes
	detFile *sealedBytes
	detSrc  *sealedBytes
	records []ConvertRecord
}

func (c *runtimeConversion) close() {
	for _, f := range c.files {
		f.Close()
	}
}

// convertForRuntime converts the verified checkpoint and detector in this
// process into sealed safetensors memory files, so that the runtime
// unpickles nothing and trusts nothing on disk. The network is rebuilt from
// the pinned EDM source, so its embedded networks.py must be the pinned one
// (else exitcode.Precondition); the detector, for which EDM holds no
// source, is rebuilt from the module source embedded in its pinned file,
// handed over separately and checked by digest.
func convertForRuntime(ckpt, det *store.Sealed, assets fidAssets, cat *catalog.Catalog) (_ *runtimeConversion, err error) {
	c := &runtimeConversion{}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	if c.net, err = decodeAsset(assets.checkpoint, ckpt, pickle.ProfileEDMCheckpoint, cat); err != nil {
		return nil, err
	}
	if m := c.net.record.SourceMatchesPin; m == nil || !*m {
		pinned := "none recorded"
		if c.net.source != nil && c.net.source.NetworksPySHA256 != "" {
			pinned = c.net.source.NetworksPySHA256
		}
		return nil, exitcode.Errorf(exitcode.Precondition, "--safe rebuilds %s from the pinned EDM source, but the checkpoint embeds a different networks.py (sha256 %s; pinned source: %s): run without --safe",
			c.net.record.Class, c.net.record.SourceSHA256.Hex(), pinned)
	}
	if c.det, err = decodeAsset(assets.detector, det, pickle.ProfileInceptionDetector, cat); err != nil {
		return nil, err
	}
	var detSrc *pickle.Source
	for i := range c.det.model.Config.Sources {
		if s := &c.det.model.Config.Sources[i]; s.SHA256 == c.det.record.SourceSHA256 && !s.SHA256.IsZero() {
			detSrc = s
		}
	}
	if detSrc == nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "--safe cannot rebuild detector %s: its class %q carries no embedded module source", assets.detector.ID, c.det.record.Class)
	}
	if c.netFile, err = sealTo(c, "edm-net.safetensors", c.net.model.WriteSafetensors); err != nil {
		return nil, err
	}
	if c.detFile, err = sealTo(c, "edm-detector.safetensors", c.det.model.WriteSafetensors); err != nil {
		return nil, err
	}
	if c.detSrc, err = sealTo(c, "edm-detector-source.py", func(w io.Writer) (int64, error) {
		n, err := io.WriteString(w, detSrc.Text)
		return int64(n), err
	}); err != nil {
		return nil, err
	}
	if c.detSrc.sha256 != detSrc.SHA256 {
		return nil, exitcode.Errorf(exitcode.Integrity, "detector source changed while it was sealed")
	}
	c.net.record.SafetensorsSHA256, c.net.record.SafetensorsSize = c.netFile.sha256, c.netFile.size
	c.det.record.SafetensorsSHA256, c.det.record.SafetensorsSize = c.detFile.sha256, c.detFile.size
	c.records = []ConvertRecord{c.net.record, c.det.record}
	return c, nil
}

// specs hands the sealed files to the runtime and returns the plan entries
// of network and detector.
func (c *runtimeConversion) specs(hand func(*os.File) int) (net, det map[string]any) {
	spec := func(what string, b *sealedBytes) map[string]any {
		return map[string]any{"what": what, "format": "safetensors", "fd": hand(b.file),
			"size": b.size, "sha256": b.sha256.Hex(), "require_sealed": true}
	}
	net = spec("converted checkpoint "+c.net.entry.ID, c.netFile)
	net["module"] = "training.networks"
	net["class_name"] = c.net.record.Class
	net["init_args"] = json.RawMessage(c.net.model.Config.InitArgs)
	net["init_kwargs"] = json.RawMessage(c.net.model.Config.InitKwargs)
	det = spec("converted detector "+c.det.entry.ID, c.detFile)
	det["module_src"] = spec("embedded source of detector "+c.det.entry.ID, c.detSrc)
	det["class_name"] = c.det.record.Class
	det["init_args"] = json.RawMessage(c.det.model.Config.InitArgs)
	det["init_kwargs"] = json.RawMessage(c.det.model.Config.InitKwargs)
	return net, det
}

// sealedBytes is a sealed memory file this process filled.
type sealedBytes struct {
	file   *os.File
	sha256 digest.SHA256
	size   int64
}

// sealTo fills a new memory file with write, hashing what is written,
// seals it (write, shrink, grow, seal) and rewinds it.
func sealTo(c *runtimeConversion, name string, write func(io.Writer) (int64, error)) (*sealedBytes, error) {
	fd, err := unix.MemfdCreate("repro:"+name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot create a sealed memory file: %v", err)
	}
	f := os.NewFile(uintptr(fd), "memfd:repro:"+name)
	c.files = append(c.files, f)
	h := digest.NewWriter(f)
	bw := bufio.NewWriterSize(h, 1<<20)
	if _, err := write(bw); err != nil {
		return nil, fmt.Errorf("failed to fill %s: %w", name, err)
	}
	if err := bw.Flush(); err != nil {
		return nil, fmt.Errorf("failed to fill %s: %w", name, err)
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		return nil, fmt.Errorf("failed to seal %s: %w", name, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	if err := store.CheckSealed(f); err != nil {
		return nil, err
	}
	sum, n := h.Sum()
	return &sealedBytes{file: f, sha256: sum, size: n}, nil
}
