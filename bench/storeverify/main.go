// Command storeverify measures how fast the store re-hashes one large blob:
// it creates a file of the given size, pins it in a catalog built through
// the Go API, imports it and then times Store.Verify on it. bench/verify.sh
// runs it next to sha256sum.
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/store"
)

func main() {
	size := flag.Int64("size", 1<<30, "blob size in bytes")
	dir := flag.String("dir", "", "work folder (required)")
	phase := flag.String("phase", "verify", "prepare: write the file and import it; verify: time the verification")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "storeverify: -dir is required")
		os.Exit(2)
	}
	file := filepath.Join(*dir, "blob.bin")
	if *phase == "prepare" {
		f, err := os.Create(file)
		check(err)
		_, err = io.CopyN(f, rand.Reader, *size)
		check(err)
		check(f.Close())
	}
	sum, n, err := digest.File(file)
	check(err)
	cat, err := catalog.New([]catalog.Entry{{ID: "bench-blob", Kind: catalog.Dataset, Description: "benchmark blob", License: "none",
		URLs: []string{"https://127.0.0.1/blob.bin"}, Size: n, SHA256: &sum, Pin: catalog.Pinned}})
	check(err)
	s, err := store.Open(filepath.Join(*dir, "home"), cat)
	check(err)
	if *phase == "prepare" {
		check(s.Import(context.Background(), "bench-blob", file, nil))
		return
	}
	start := time.Now()
	res, err := s.Verify(context.Background(), []string{"bench-blob"})
	check(err)
	el := time.Since(start)
	fmt.Printf("repro verify: %d bytes in %.3f s = %.2f GB/s (ok=%v)\n", n, el.Seconds(), float64(n)/el.Seconds()/1e9, res[0].OK)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "storeverify:", err)
		os.Exit(1)
	}
}
