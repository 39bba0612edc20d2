//go:build !(linux && (amd64 || arm64))

package pickle

import "os"

// startWriteback is a no-op where sync_file_range is not available.
func startWriteback(f *os.File, off, n int64) {}
