// Package layout owns the layout of REPRO_HOME, the one folder where repro
// keeps state between commands. Every path under it is built here and
// nowhere else; the packages that own the files (store, runs, sandbox) ask
// for their folders by name. docs/ARCHITECTURE.md ("REPRO_HOME") shows the
// tree and which package writes each part.
package layout

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/reprolab/repro/internal/exitcode"
)

// Home is the root of a REPRO_HOME.
type Home string

// DefaultHome returns REPRO_HOME (made absolute), else $XDG_DATA_HOME/repro,
// else ~/.local/share/repro.
func DefaultHome() (string, error) {
	if h := os.Getenv("REPRO_HOME"); h != "" {
		return filepath.Abs(h)
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "repro"), nil
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", exitcode.Errorf(exitcode.Precondition, "cannot find a home folder for the store: set REPRO_HOME")
	}
	return filepath.Join(u, ".local", "share", "repro"), nil
}

func (h Home) join(elem ...string) string {
	return filepath.Join(append([]string{string(h)}, elem...)...)
}

// Blobs is the folder of verified blobs, named by their SHA-256 in hex.
func (h Home) Blobs() string { return h.join("blobs", "sha256") }

// Blob is the path of the blob with SHA-256 hex.
func (h Home) Blob(hex string) string { return h.join("blobs", "sha256", hex) }

// Refs is the folder of catalog references.
func (h Home) Refs() string { return h.join("refs") }

// Ref is the reference file of catalog id.
func (h Home) Ref(id string) string { return h.join("refs", id+".json") }

// Partial is the download in progress of the blob with SHA-256 hex.
func (h Home) Partial(hex string) string { return h.join("tmp", hex+".partial") }

// PartialSource names the one source the bytes of Partial(hex) came from.
func (h Home) PartialSource(hex string) string { return h.join("tmp", hex+".partial.source") }

// Lock is the lock file called name.
func (h Home) Lock(name string) string { return h.join("locks", name+".lock") }

// Quarantined is where a corrupt blob with SHA-256 hex goes; stamp keeps
// quarantined copies apart.
func (h Home) Quarantined(hex string, stamp int64) string {
	return h.join("quarantine", fmt.Sprintf("%s.%d", hex, stamp))
}

// State is the folder a package owns for its own files (caches). name
// must be a plain folder name.
func (h Home) State(name string) (string, error) {
	if name == "" || name != filepath.Base(name) || name[0] == '.' {
		return "", fmt.Errorf("invalid state folder name %q", name)
	}
	return h.join("state", name), nil
}

// Runs is the folder of run folders.
func (h Home) Runs() string { return h.join("runs") }

// Run is the folder of the run with id.
func (h Home) Run(id string) string { return h.join("runs", id) }

// Index is the folder of the run index, a cache rebuilt from the run
// folders.
func (h Home) Index() string { return h.join("index") }

// RunIndex is the run index database (SQLite); its -wal and -shm files sit
// beside it.
func (h Home) RunIndex() string { return h.join("index", "runs.db") }

// RunIndexLock is the lock that keeps a run index from being replaced
// while another process uses it.
func (h Home) RunIndexLock() string { return h.join("index", "runs.lock") }

// Imports is the folder of the records of runs imported from evidence
// bundles (see internal/runimport) and of their staging folders.
func (h Home) Imports() string { return h.join("imports") }

// ImportRecord is the import record of run id: the trusted key its bundle
// was accepted with.
func (h Home) ImportRecord(id string) string { return h.join("imports", id+".json") }

// Keys is the folder of the local run key pair.
func (h Home) Keys() string { return h.join("keys") }

// BoardLogKey is the key that signs the checkpoints of the boards' logs:
// a note signer key (see internal/boardlog), mode 0600.
func (h Home) BoardLogKey() string { return h.join("keys", "board-log.key") }

// BoardLog is the folder of the log of the board named name (a plain
// folder name, see boardlog.Name): its checkpoint and tiles.
func (h Home) BoardLog(name string) (string, error) {
	if name == "" || name != filepath.Base(name) || name[0] == '.' {
		return "", fmt.Errorf("invalid board log name %q", name)
	}
	return h.join("boardlog", name), nil
}

// Trust is the default trust file (see internal/trust); --trust names
// another.
func (h Home) Trust() string { return h.join("trust.json") }

// Sandbox is the folder of the pinned evaluator image and its cache.
func (h Home) Sandbox() string { return h.join("sandbox") }

// ImagePin is the file that pins the evaluator image.
func (h Home) ImagePin() string { return h.join("sandbox", "image.json") }

// ImageSBOM is the evaluator image's SBOM (CycloneDX 1.6 JSON), whose
// digest image.json pins.
func (h Home) ImageSBOM() string { return h.join("sandbox", "sbom.cdx.json") }

// ImageScan is the signed vulnerability-scan attestation of the
// evaluator image (a DSSE envelope over an in-toto Statement).
func (h Home) ImageScan() string { return h.join("sandbox", "scan.dsse.json") }

// ImageSignature is the evaluator image's signature: a DSSE envelope
// over an in-toto Statement naming the image and its SBOM, signed with an
// image key (see internal/imagetrust).
func (h Home) ImageSignature() string { return h.join("sandbox", "image.sig.dsse.json") }

// SandboxSettings holds the sandbox settings (the runtime a run must use).
func (h Home) SandboxSettings() string { return h.join("sandbox", "settings.json") }

// ImageCache is the folder of the evaluator image's cached layer.
func (h Home) ImageCache() string { return h.join("sandbox", "cache") }

// StoreFolders are the folders the store creates when it opens.
func (h Home) StoreFolders() []string {
	return []string{string(h), h.Blobs(), h.Refs(), h.join("tmp"), h.join("locks"), h.join("quarantine"), h.join("state")}
}
