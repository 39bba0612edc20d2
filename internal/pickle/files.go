package pickle

import (
	"os"
	"path/filepath"

	"github.com/reprolab/repro/internal/atomicfile"
)

// WrittenModel says what WriteFiles wrote.
type WrittenModel struct {
	Safetensors string `json:"safetensors"` // path of model.safetensors
	SHA256      string `json:"sha256"`      // its SHA-256 in hex
	Size        int64  `json:"size"`        // its size in bytes
	Config      string `json:"config"`      // path of config.json
	Tensors     int    `json:"tensors"`
}

// WriteFiles writes the model's tensors to dir/model.safetensors and its
// config to dir/config.json, each atomically with mode perm.
func (m *Model) WriteFiles(dir string, perm os.FileMode) (*WrittenModel, error) {
	st := filepath.Join(dir, "model.safetensors")
	sum, n, err := m.WriteSafetensorsFile(st, perm)
	if err != nil {
		return nil, err
	}
	cfg, err := m.ConfigJSON()
	if err != nil {
		return nil, err
	}
	cf := filepath.Join(dir, "config.json")
	if err := atomicfile.WriteFile(cf, cfg, perm); err != nil {
		return nil, err
	}
	return &WrittenModel{Safetensors: st, SHA256: sum.Hex(), Size: n, Config: cf, Tensors: len(m.Tensors)}, nil
}
