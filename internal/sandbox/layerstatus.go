package sandbox

import (
	"errors"
	"io"
)

// errNoStatus is layerDpkgStatus's answer for a layer without the file.
var errNoStatus = errors.New("no dpkg status")

// LayerDpkgStatus returns the dpkg status file (var/lib/dpkg/status) an
// uncompressed layer tarball holds, reading the whole stream; nil when the
// layer holds none. An image's packages are those of the last layer that
// writes the file.
func LayerDpkgStatus(r io.Reader) ([]byte, error) {
	b, err := layerDpkgStatus(r)
	if err != nil && b == nil && errors.Is(err, errNoStatus) {
		return nil, nil
	}
	return b, err
}
