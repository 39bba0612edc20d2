package edm

import (
	"os"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/store"
)

// ConvertRecord describes one conversion of a pinned pickle to safetensors.
type ConvertRecord struct {
	ID                string        `json:"id"`
	Asset             digest.SHA256 `json:"asset_sha256"`
	Class             string        `json:"class"`
	SafetensorsSHA256 digest.SHA256 `json:"safetensors_sha256"`
	Tensors           int           `json:"tensors"`
}

// runtimeConversion holds sealed memory files with converted networks.
type runtimeConversion struct {
	files   []*os.File
	net     map[string]any
	det     map[string]any
	records []ConvertRecord
}

func (c *runtimeConversion) close() {
	for _, f := range c.files {
		f.Close()
	}
}

// specs hands the converted files to the runtime and returns the plan
// entries of network and detector.
func (c *runtimeConversion) specs(hand func(*os.File) int) (net, det map[string]any) {
	return c.net, c.det
}

func convertForRuntime(ckpt, det *store.Sealed, assets fidAssets) (*runtimeConversion, error) {
	return nil, exitcode.Errorf(exitcode.Precondition, "--safe is not available in this build")
}
