package release

import (
	"strings"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
)

// AttestRequest is what AttestDir attests, as given on a command line.
type AttestRequest struct {
	// KeyPath is the release signing key (PKCS #8 PEM, mode 0600).
	KeyPath                 string
	Version, Commit, Source string
	// BuildCommands are PLATFORM=COMMAND pairs; Started is when the build
	// started (RFC 3339), "" for Now.
	BuildCommands []string
	Started       string
	Now           time.Time
}

// AttestDir loads the key at r.KeyPath (exit 3 when it cannot be used),
// then parses r.Started and r.BuildCommands (exit 2 when malformed), and
// runs Attest on dir with the options they give, finishing at r.Now. It
// returns the signing key's id.
func AttestDir(dir string, r AttestRequest) (string, error) {
	k, err := keys.LoadPrivate(r.KeyPath)
	if err != nil {
		return "", exitcode.Errorf(exitcode.Precondition, "release key: %v (make one with 'repro keys new --out FILE')", err)
	}
	o := Options{Version: r.Version, Commit: r.Commit, Source: r.Source, BuildCommand: map[string]string{}, FinishedOn: r.Now}
	o.StartedOn = o.FinishedOn
	if r.Started != "" {
		if o.StartedOn, err = time.Parse(time.RFC3339, r.Started); err != nil {
			return "", exitcode.Errorf(exitcode.Usage, "--started %q: %v", r.Started, err)
		}
	}
	for _, bc := range r.BuildCommands {
		p, c, ok := strings.Cut(bc, "=")
		if !ok {
			return "", exitcode.Errorf(exitcode.Usage, "--build-command %q: give PLATFORM=COMMAND", bc)
		}
		o.BuildCommand[p] = c
	}
	if err := Attest(dir, k, o); err != nil {
		return "", err
	}
	return keys.ID(k.PublicKey()), nil
}

// VerifyDir verifies the release in dir (Verify) with the public key
// read from keyPath (ReadKey).
func VerifyDir(dir, keyPath string) (*Verified, error) {
	pub, err := ReadKey(keyPath)
	if err != nil {
		return nil, err
	}
	return Verify(dir, pub)
}
