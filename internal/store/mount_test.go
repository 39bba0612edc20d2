package store

import "golang.org/x/sys/unix"

func mountTmpfs(dir, opts string) error { return unix.Mount("tmpfs", dir, "tmpfs", 0, opts) }
func unmount(dir string) error          { return unix.Unmount(dir, 0) }
