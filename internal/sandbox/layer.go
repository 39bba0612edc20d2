package sandbox

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// LayerTime is the modification time of every entry of the evaluator
// image's layer (Debian 12's release day), and the image's creation time.
var LayerTime = time.Date(2023, 6, 10, 0, 0, 0, 0, time.UTC)

// layerRules say which parts of a freshly bootstrapped root filesystem go
// into the image. Folders in emptied keep their entry but lose their
// contents; paths in dropped are left out entirely. Everything they name is
// either host-specific, volatile (logs, caches), or mounted by the engine.
var layerRules = struct {
	emptied []string
	dropped []string
}{
	emptied: []string{"dev", "proc", "sys", "run", "tmp", "var/tmp", "var/log", "var/cache/apt", "var/lib/apt/lists", "var/cache/debconf", "var/cache/ldconfig", "mnt", "media"},
	dropped: []string{"debootstrap", "etc/hostname", "etc/hosts", "etc/resolv.conf", "etc/machine-id", "var/lib/dbus/machine-id",
		"var/lib/dpkg/status-old", "var/lib/dpkg/diversions-old", "var/lib/dpkg/statoverride-old", "var/lib/dpkg/available-old",
		"etc/passwd-", "etc/group-", "etc/shadow-", "etc/gshadow-"},
}

// LayerReport says what writeLayer changed or left out.
type LayerReport struct {
	Stripped []string `json:"setuid_stripped"` // files that lost a setuid or setgid bit
	Skipped  []string `json:"skipped"`         // special files (devices, FIFOs, sockets) left out
	Entries  int      `json:"entries"`
}

// writeLayer writes the tree at root as an image layer: entries in
// lexical order of their paths, every time set to LayerTime, owner and
// group 0 with no names, setuid and setgid bits removed, no extended
// attributes (so no file capabilities), hard links kept as links to their
// first path, devices, FIFOs and sockets left out. The same tree always
// gives the same bytes.
func writeLayer(root string, w io.Writer) (*LayerReport, error) {
	tw := tar.NewWriter(w)
	rep := &LayerReport{}
	links := make(map[[2]uint64]string)
	var walk func(rel string) error
	walk = func(rel string) error {
		entries, err := os.ReadDir(filepath.Join(root, rel)) // sorted by name
		if err != nil {
			return err
		}
		for _, de := range entries {
			child := de.Name()
			if rel != "" {
				child = rel + "/" + de.Name()
			}
			if isDropped(child) {
				continue
			}
			full := filepath.Join(root, child)
			fi, err := os.Lstat(full)
			if err != nil {
				return err
			}
			st, ok := fi.Sys().(*syscall.Stat_t)
			if !ok {
				return fmt.Errorf("%s: no file status", full)
			}
			mode := int64(fi.Mode().Perm())
			if fi.Mode()&os.ModeSticky != 0 {
				mode |= 01000
			}
			if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
				rep.Stripped = append(rep.Stripped, "/"+child)
			}
			h := &tar.Header{Name: child, Mode: mode, ModTime: LayerTime, Format: tar.FormatPAX}
			var body func() error
			switch {
			case fi.IsDir():
				h.Typeflag = tar.TypeDir
				h.Name += "/"
			case fi.Mode()&os.ModeSymlink != 0:
				target, err := os.Readlink(full)
				if err != nil {
					return err
				}
				h.Typeflag = tar.TypeSymlink
				h.Linkname = target
			case fi.Mode().IsRegular():
				key := [2]uint64{uint64(st.Dev), st.Ino}
				if first, seen := links[key]; seen && st.Nlink > 1 {
					h.Typeflag = tar.TypeLink
					h.Linkname = first
					break
				}
				if st.Nlink > 1 {
					links[key] = child
				}
				h.Typeflag = tar.TypeReg
				h.Size = fi.Size()
				body = func() error { return copyExact(tw, full, fi.Size()) }
			default:
				rep.Skipped = append(rep.Skipped, "/"+child)
				continue
			}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			rep.Entries++
			if body != nil {
				if err := body(); err != nil {
					return err
				}
			}
			if fi.IsDir() && !isEmptied(child) {
				if err := walk(child); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(""); err != nil {
		return nil, fmt.Errorf("failed to write the image layer: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("failed to write the image layer: %w", err)
	}
	return rep, nil
}

func isDropped(rel string) bool {
	for _, d := range layerRules.dropped {
		if rel == d {
			return true
		}
	}
	return false
}

func isEmptied(rel string) bool {
	for _, d := range layerRules.emptied {
		if rel == d {
			return true
		}
	}
	return false
}

// copyExact copies exactly size bytes of the regular file at path, refusing
// a file that is replaced by a link or changes size meanwhile.
func copyExact(w io.Writer, path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(w, io.LimitReader(f, size+1))
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("%s changed size while it was read (%d bytes, expected %d)", path, n, size)
	}
	return nil
}
