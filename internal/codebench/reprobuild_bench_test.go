package codebench

import (
	"sync"
	"testing"
)

// BenchmarkReproBuild measures naming the running binary (ReproBuild's
// hash of /proc/self/exe, without its once).
func BenchmarkReproBuild(b *testing.B) {
	for i := 0; i < b.N; i++ {
		reproBuild.once = sync.Once{}
		if _, err := ReproBuild(); err != nil {
			b.Fatal(err)
		}
	}
}
