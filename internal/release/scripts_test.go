package release

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/reprolab/repro/internal/testenv"
)

// TestScriptsLint: the release script, the maintainer's bundle check and
// the README's two commands (and the installer they share) pass shellcheck (Debian package shellcheck).
func TestScriptsLint(t *testing.T) {
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		testenv.Missing(t, "shellcheck", "scripts/deps.sh installs it")
	}
	root := testenv.RepoRoot(t)
	for _, s := range []string{"release.sh", "check-bundle.sh", "quickstart.sh", "test.sh", "deps.sh"} {
		if out, err := exec.Command(sc, filepath.Join(root, "scripts", s)).CombinedOutput(); err != nil {
			t.Errorf("shellcheck %s: %v\n%s", s, err, out)
		}
	}
}
