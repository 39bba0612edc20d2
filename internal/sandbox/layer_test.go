package sandbox

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// makeTree builds a small root filesystem with the kinds of entries
// debootstrap leaves: setuid files, links, a FIFO, host files to drop.
func makeTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"usr/bin", "etc", "tmp", "var/log", "dev", "var/lib/dpkg"} {
		must(os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	must(os.WriteFile(filepath.Join(root, "usr/bin/su"), []byte("#!su"), 0o755))
	must(os.Chmod(filepath.Join(root, "usr/bin/su"), 0o755|os.ModeSetuid))
	must(os.WriteFile(filepath.Join(root, "usr/bin/wall"), []byte("#!wall"), 0o755))
	must(os.Chmod(filepath.Join(root, "usr/bin/wall"), 0o755|os.ModeSetgid))
	must(os.WriteFile(filepath.Join(root, "usr/bin/python3.11"), []byte("python"), 0o755))
	must(os.Symlink("python3.11", filepath.Join(root, "usr/bin/python3")))
	must(os.Link(filepath.Join(root, "usr/bin/python3.11"), filepath.Join(root, "usr/bin/python3-hard")))
	must(os.WriteFile(filepath.Join(root, "etc/resolv.conf"), []byte("nameserver 10.0.0.1"), 0o644))
	must(os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644))
	must(os.WriteFile(filepath.Join(root, "var/log/dpkg.log"), []byte("log"), 0o644))
	must(os.WriteFile(filepath.Join(root, "tmp/junk"), []byte("junk"), 0o644))
	must(os.Chmod(filepath.Join(root, "tmp"), 0o777|os.ModeSticky))
	must(syscall.Mkfifo(filepath.Join(root, "etc/initctl"), 0o600))
	if os.Geteuid() == 0 {
		must(os.Chown(filepath.Join(root, "etc/passwd"), 1000, 1000))
	}
	return root
}

func TestWriteLayerDeterministic(t *testing.T) {
	root := makeTree(t)
	var a, b bytes.Buffer
	ra, err := writeLayer(root, &a)
	if err != nil {
		t.Fatal(err)
	}
	// Touch every time stamp: the layer must not change.
	later := time.Now().Add(time.Hour)
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode()&os.ModeSymlink == 0 {
			os.Chtimes(p, later, later)
		}
		return nil
	})
	if _, err := writeLayer(root, &b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("the same tree gave two different layers")
	}
	if len(ra.Stripped) != 2 || len(ra.Skipped) != 1 || ra.Skipped[0] != "/etc/initctl" {
		t.Errorf("report %+v", ra)
	}

	tr := tar.NewReader(bytes.NewReader(a.Bytes()))
	var names []string
	entries := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		entries[h.Name] = h
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s owned by %d:%d %q:%q", h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		if !h.ModTime.Equal(LayerTime) {
			t.Errorf("%s has time %v", h.Name, h.ModTime)
		}
		if h.Mode&(06000) != 0 {
			t.Errorf("%s keeps a setuid/setgid bit: %o", h.Name, h.Mode)
		}
		if len(h.PAXRecords) != 0 && h.PAXRecords["SCHILY.xattr.security.capability"] != "" {
			t.Errorf("%s keeps file capabilities", h.Name)
		}
	}
	want := []string{"dev/", "etc/", "etc/passwd", "tmp/", "usr/", "usr/bin/", "usr/bin/python3", "usr/bin/python3-hard",
		"usr/bin/python3.11", "usr/bin/su", "usr/bin/wall", "var/", "var/lib/", "var/lib/dpkg/", "var/log/"}
	if !slices.Equal(names, want) {
		t.Errorf("entries\n%v\nwant\n%v", names, want)
	}
	for _, gone := range []string{"etc/resolv.conf", "var/log/dpkg.log", "tmp/junk", "etc/initctl"} {
		if entries[gone] != nil {
			t.Errorf("%s is in the layer", gone)
		}
	}
	for _, kept := range []string{"tmp/", "var/log/", "dev/", "usr/bin/su", "etc/passwd"} {
		if entries[kept] == nil {
			t.Errorf("%s is missing from the layer", kept)
		}
	}
	if h := entries["tmp/"]; h == nil || h.Mode != 01777 {
		t.Errorf("tmp/ lost its sticky bit: %+v", h)
	}
	if h := entries["usr/bin/python3"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "python3.11" {
		t.Errorf("symlink: %+v", h)
	}
	if h := entries["usr/bin/python3.11"]; h == nil || h.Typeflag != tar.TypeLink || h.Linkname != "usr/bin/python3-hard" {
		t.Errorf("hard link: %+v", h)
	}
}

// TestAssembleImageDeterministic: the same layer gives the same image ID
// and manifest digest, whenever and wherever it is assembled.
func TestAssembleImageDeterministic(t *testing.T) {
	root := makeTree(t)
	dir := t.TempDir()
	var ids []string
	for i := 0; i < 2; i++ {
		p := filepath.Join(dir, "layer.tar")
		f, _ := os.Create(p)
		if _, err := writeLayer(root, f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		img, tag, err := assembleImage(p)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := img.ConfigName()
		md, _ := img.Digest()
		ids = append(ids, id.String()+" "+md.String()+" "+tag.String())
		cf, _ := img.ConfigFile()
		if !cf.Created.Time.Equal(LayerTime) || cf.Config.User == "" || cf.Config.User[0] == '0' {
			t.Errorf("config %+v", cf)
		}
	}
	if ids[0] != ids[1] {
		t.Errorf("two assemblies differ:\n%s\n%s", ids[0], ids[1])
	}
}
