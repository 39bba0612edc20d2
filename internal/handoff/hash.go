package handoff

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"

	"github.com/reprolab/repro/internal/digest"
)

// fileSum is what hashing one file found.
type fileSum struct {
	Size   int64
	SHA256 digest.SHA256
	MD5    string // hex; empty unless asked for
}

// hashFile reads a regular file once and returns its size, SHA-256 and,
// when withMD5 is set, MD5. It follows a symbolic link (datasets are often
// spread over disks by links) but refuses anything that is not a regular
// file, and it stops when ctx is cancelled.
func hashFile(ctx context.Context, name string, withMD5 bool) (fileSum, error) {
	return hashFileProgress(ctx, name, withMD5, nil)
}

// Progress is told how far hashing a file has come: name, bytes done and
// the file's size. It is called about every 256 MiB and at the end.
type Progress func(name string, done, total int64)

func hashFileProgress(ctx context.Context, name string, withMD5 bool, progress Progress) (fileSum, error) {
	f, err := os.Open(name)
	if err != nil {
		return fileSum{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fileSum{}, err
	}
	if !fi.Mode().IsRegular() {
		return fileSum{}, fmt.Errorf("%s is not a regular file", name)
	}
	s := digest.NewHash()
	var m hash.Hash
	if withMD5 {
		m = md5.New()
	}
	// MD5 and SHA-256 run side by side on each chunk: one pass over the
	// file, about as fast as the slower of the two.
	var wg sync.WaitGroup
	buf := make([]byte, 4<<20)
	var n, last int64
	for {
		if progress != nil && n-last >= 256<<20 {
			progress(name, n, fi.Size())
			last = n
		}
		if err := ctx.Err(); err != nil {
			return fileSum{}, err
		}
		k, rerr := io.ReadFull(f, buf)
		if k > 0 {
			chunk := buf[:k]
			if m != nil {
				wg.Add(1)
				go func() {
					defer wg.Done()
					m.Write(chunk)
				}()
			}
			s.Write(chunk)
			wg.Wait()
			n += int64(k)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return fileSum{}, rerr
		}
	}
	if progress != nil && fi.Size() >= 256<<20 {
		progress(name, n, fi.Size())
	}
	out := fileSum{Size: n, SHA256: s.Digest()}
	if withMD5 {
		out.MD5 = hex.EncodeToString(m.Sum(nil))
	}
	return out, nil
}
