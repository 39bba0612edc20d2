package runs

import (
	"errors"
	"os"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/trust"
)

// ListedKey is one key of a trust file as `repro keys list` shows it.
type ListedKey struct {
	Name      string          `json:"name"`
	ID        string          `json:"key_id"`
	Purposes  []trust.Purpose `json:"purposes"`
	NotBefore *time.Time      `json:"not_before,omitempty"`
	NotAfter  *time.Time      `json:"not_after,omitempty"`
	// Local is whether the key is home's run key (its public key file).
	Local bool `json:"local"`
}

// ListKeys returns the keys of the trust file at trustPath ("" means
// home's, as LoadTrust says), in the file's order, marking the one that
// is home's run key. A home whose public run key cannot be read marks
// none. Its errors are LoadTrust's; it makes nothing.
func ListKeys(home, trustPath string) ([]ListedKey, error) {
	tf, err := LoadTrust(home, trustPath)
	if err != nil {
		return nil, err
	}
	local := ""
	if pub, err := keys.LoadPublic(LocalPublicKeyPath(home)); err == nil {
		local = keys.ID(pub)
	}
	out := []ListedKey{}
	for _, k := range tf.Keys {
		out = append(out, ListedKey{k.Name, k.ID, k.Purposes, k.NotBefore, k.NotAfter, k.ID == local})
	}
	return out, nil
}

// ExportedKey is the public half of a home's run key.
type ExportedKey struct {
	ID  string
	PEM []byte // PEM SubjectPublicKeyInfo
	// Trust, when asked for, is a trust file that trusts the key for run
	// records only, under the name and window home's trust file gives it
	// (LocalKeyName and an open window when that file lacks the key or
	// cannot be read).
	Trust *trust.File
}

// ExportKey returns the public half of home's run key, making the key on
// first use as LocalKey does (a failure is an exitcode.Precondition
// error), and with withTrust a trust file for it.
func ExportKey(home string, withTrust bool) (*ExportedKey, error) {
	s, err := LocalKey(home)
	if err != nil {
		return nil, exitcode.New(exitcode.Precondition, err)
	}
	pub := s.PublicKey()
	out := &ExportedKey{ID: keys.ID(pub), PEM: keys.MarshalPublic(pub)}
	if withTrust {
		entry := trust.NewKey(LocalKeyName, pub, []trust.Purpose{trust.RunRecords}, nil, nil)
		if tf, err := LoadTrust(home, ""); err == nil {
			for _, k := range tf.Keys {
				if k.ID == entry.ID {
					entry.Name, entry.NotBefore, entry.NotAfter = k.Name, k.NotBefore, k.NotAfter
				}
			}
		}
		out.Trust = &trust.File{Version: trust.Version, Keys: []trust.Key{entry}}
	}
	return out, nil
}

// NewStandaloneKey makes a new ed25519 key that belongs to no REPRO_HOME
// (an image-signing key, say): its private key goes to out (PKCS #8 PEM,
// mode 0600) and its public key to out+".pub" (PEM SubjectPublicKeyInfo),
// both written atomically. Neither file may exist already: that, or out
// that cannot be written, is an exitcode.Usage error and nothing is
// written. It returns the key id and the public key's path.
func NewStandaloneKey(out string) (id, pubPath string, err error) {
	s, err := keys.Generate()
	if err != nil {
		return "", "", err
	}
	pubPath = out + ".pub"
	if _, err := os.Lstat(pubPath); !errors.Is(err, os.ErrNotExist) {
		return "", "", exitcode.Errorf(exitcode.Usage, "%q already exists; refusing to replace a key", pubPath)
	}
	if err := keys.WritePrivate(out, s); err != nil {
		return "", "", exitcode.New(exitcode.Usage, err)
	}
	if err := atomicfile.WriteFile(pubPath, keys.MarshalPublic(s.PublicKey()), 0o644); err != nil {
		return "", "", err
	}
	return keys.ID(s.PublicKey()), pubPath, nil
}
