package codebench

import (
	"os"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench/wire"
)

// TestLoadReferenceOfAnEmptyHome: a REPRO_HOME without the dataset or an
// image gives an incomplete profile that names both, and stays as it
// was (a served board writes nothing).
func TestLoadReferenceOfAnEmptyHome(t *testing.T) {
	home := t.TempDir()
	ref := LoadReference(home, "HumanEvalPlus-Mini-v0.1.10")
	if ref.Dataset != "humanevalplus-mini-v0.1.10" || ref.Engine != EngineRepro || ref.Harness != wire.HarnessDigest.Hex() || ref.Limits != DefaultRunLimits() {
		t.Errorf("reference %+v", ref)
	}
	if len(ref.Missing) != 2 || !strings.Contains(ref.Missing[0], "repro fetch humanevalplus-mini-v0.1.10") || !strings.Contains(ref.Missing[1], "repro image build") {
		t.Errorf("missing %q", ref.Missing)
	}
	if ents, _ := os.ReadDir(home); len(ents) != 0 {
		t.Errorf("LoadReference wrote into the home: %v", ents)
	}
	if ref := LoadReference(home, "cifar10"); len(ref.Missing) == 0 || !strings.Contains(ref.Missing[0], "not one repro scores") {
		t.Errorf("an unknown dataset: %q", ref.Missing)
	}
}
