//go:build linux && (amd64 || arm64)

package pickle

import (
	"os"
	"syscall"
)

const syncFileRangeWrite = 2 // SYNC_FILE_RANGE_WRITE

// startWriteback asks the kernel to start writing [off, off+n) of f to
// disk without waiting, so that the fsync that follows has less left to do.
// It is only a hint; errors are ignored (fsync reports real ones).
func startWriteback(f *os.File, off, n int64) {
	syscall.SyncFileRange(int(f.Fd()), off, n, syncFileRangeWrite)
}
