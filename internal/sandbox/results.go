package sandbox

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// Results holds what a program left in the results folder. Only regular
// files are read; anything else (a symlink, a FIFO, a device, a hard link,
// a file over the cap) is named in Rejected and its content never read.
type Results struct {
	Files    map[string][]byte // path relative to /results -> content
	Rejected []string          // "name: reason"
}

// errResultsTooLarge means the archive itself broke the caps.
var errResultsTooLarge = errors.New("results folder archive exceeds its caps")

// readResults parses the engine's tar archive of the results folder. The
// archive is untrusted: every name is checked, every size is compared with
// the caps before anything is allocated, and the whole stream is bounded.
// The archive's top entry is the folder itself ("results/").
func readResults(r io.Reader, maxBytes, maxEntries int64) (*Results, error) {
	// Each entry costs at most a few 512-byte header blocks (PAX records
	// included); bound the stream so that a corrupt one cannot run on.
	limit := maxBytes + (maxEntries+2)*8*512 + 2*512
	lr := &io.LimitedReader{R: r, N: limit + 1}
	tr := tar.NewReader(lr)
	res := &Results{Files: make(map[string][]byte)}
	var total, entries int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if lr.N <= 0 {
				return nil, errResultsTooLarge
			}
			return nil, fmt.Errorf("failed to read the results archive: %w", err)
		}
		entries++
		if entries > maxEntries+1 {
			return nil, fmt.Errorf("%w: more than %d entries", errResultsTooLarge, maxEntries)
		}
		name, ok := resultName(h.Name)
		if !ok {
			res.Rejected = append(res.Rejected, fmt.Sprintf("%q: invalid name", clip(h.Name)))
			continue
		}
		if name == "" { // the folder itself
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg:
		case tar.TypeLink:
			// A hard link inside the folder to a file already read: the
			// same content under a second name.
			target, ok := resultName(h.Linkname)
			b, read := res.Files[target]
			if !ok || !read {
				res.Rejected = append(res.Rejected, fmt.Sprintf("%s: hard link to %q, not to a result read before it", name, clip(h.Linkname)))
				continue
			}
			if _, dup := res.Files[name]; dup {
				return nil, fmt.Errorf("results archive names %s twice", name)
			}
			if int64(len(b)) > maxBytes-total {
				res.Rejected = append(res.Rejected, fmt.Sprintf("%s: %d bytes exceed the results cap of %d", name, len(b), maxBytes))
				continue
			}
			total += int64(len(b))
			res.Files[name] = b
			continue
		default:
			res.Rejected = append(res.Rejected, fmt.Sprintf("%s: not a regular file (%s)", name, typeName(h.Typeflag)))
			continue
		}
		if h.Size < 0 || h.Size > maxBytes-total {
			res.Rejected = append(res.Rejected, fmt.Sprintf("%s: %d bytes exceed the results cap of %d", name, h.Size, maxBytes))
			continue
		}
		if _, dup := res.Files[name]; dup {
			return nil, fmt.Errorf("results archive names %s twice", name)
		}
		b := make([]byte, h.Size)
		if _, err := io.ReadFull(tr, b); err != nil {
			return nil, fmt.Errorf("failed to read result %s: %w", name, err)
		}
		total += h.Size
		res.Files[name] = b
	}
	if lr.N <= 0 {
		return nil, errResultsTooLarge
	}
	return res, nil
}

// resultName maps an archive name ("results/x/y") to the path below the
// results folder ("x/y"), refusing anything that is not a clean relative
// path inside it.
func resultName(n string) (string, bool) {
	if n == "" || strings.HasPrefix(n, "/") || strings.ContainsRune(n, 0) || len(n) > 4096 {
		return "", false
	}
	n = strings.TrimSuffix(n, "/")
	top := path.Base(ResultsDir)
	if n == top {
		return "", true
	}
	rest, ok := strings.CutPrefix(n, top+"/")
	if !ok || rest == "" || path.Clean(rest) != rest || rest == ".." || strings.HasPrefix(rest, "../") {
		return "", false
	}
	return rest, true
}

func typeName(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symlink"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeFifo:
		return "FIFO"
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	}
	return fmt.Sprintf("type %q", t)
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
