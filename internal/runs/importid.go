package runs

import (
	"fmt"
	"strings"
)

// importKeyDigits is how many hex digits of the signing key's id an
// imported run's id carries (64 bits: no key can be made to share them
// with another by trial).
const importKeyDigits = 16

// ImportedID is the id under which a run whose record names run orig,
// signed by the key whose id (keys.ID, hex) is keyID, is kept when it is
// imported into a REPRO_HOME: orig with the key id's first 16 hex digits
// inserted before its time, e.g. humaneval-20261201T225716Z-cd830285
// signed by d7ae11cb… becomes humaneval-d7ae11cb0b116572-20261201T225716Z-cd830285.
// Two signers' runs thus never share an id, whatever ids their records
// name; the same signer's run always gets the same id. An orig that is
// not a run id, a key id shorter than 16 hex digits, or a result that is
// not a run id (a kind too long) is an error.
func ImportedID(orig, keyID string) (string, error) {
	if !ValidID(orig) {
		return "", fmt.Errorf("%q is not a run id", orig)
	}
	if len(keyID) < importKeyDigits || strings.Trim(keyID[:importKeyDigits], "0123456789abcdef") != "" {
		return "", fmt.Errorf("key id %q is not hex", keyID)
	}
	i := strings.LastIndexByte(orig[:strings.LastIndexByte(orig, '-')], '-')
	id := orig[:i] + "-" + keyID[:importKeyDigits] + orig[i:]
	if !ValidID(id) {
		return "", fmt.Errorf("run id %q is too long to carry its signer's key id", orig)
	}
	return id, nil
}

// SplitImportedID reads an id of ImportedID's form: the run id its record
// names and the key id digits it carries; ok is false for any other id.
func SplitImportedID(id string) (orig, keyDigits string, ok bool) {
	if !ValidID(id) {
		return "", "", false
	}
	t := strings.LastIndexByte(id[:strings.LastIndexByte(id, '-')], '-') // before the time
	k := strings.LastIndexByte(id[:t], '-')
	if k < 0 || t-k-1 != importKeyDigits || strings.Trim(id[k+1:t], "0123456789abcdef") != "" {
		return "", "", false
	}
	orig = id[:k] + id[t:]
	if !ValidID(orig) {
		return "", "", false
	}
	return orig, id[k+1 : t], true
}
