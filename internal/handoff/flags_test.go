package handoff

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

func TestConfigFromFlags(t *testing.T) {
	if cfg, d, err := ConfigFromFlags("", ""); cfg != nil || d != "" || err != nil {
		t.Errorf("no flags: %v %q %v", cfg, d, err)
	}
	if cfg, _, err := ConfigFromFlags("", ContainerApptainer); err != nil || cfg == nil || cfg.Container != ContainerApptainer {
		t.Errorf("--container apptainer: %+v %v", cfg, err)
	}
	if _, _, err := ConfigFromFlags("", "docker"); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("--container docker: %v, want a usage error", err)
	}
	file := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(file, []byte(`{"container": "pyxis"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, d, err := ConfigFromFlags(file, "")
	if err != nil {
		t.Fatalf("a minimal configuration: %v", err)
	}
	if cfg.Container != ContainerPyxis || d == "" {
		t.Errorf("config file: %+v %q", cfg, d)
	}
	if _, _, err := ConfigFromFlags(file, ContainerApptainer); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("contradicting --container: %v, want a usage error", err)
	}
}
