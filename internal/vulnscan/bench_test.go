package vulnscan_test

import (
	"fmt"
	"testing"

	"github.com/reprolab/repro/internal/vulnscan"
)

// BenchmarkLoadFeedAndMatch reads a feed of 20,000 small Debian records
// (about the size of the Debian archive's bookworm share) and matches the
// fixture's packages against it.
func BenchmarkLoadFeedAndMatch(b *testing.B) {
	const n = 20000
	pkgs := []string{"python3.11", "zlib", "foo", "tilde-tool", "absent"}
	recs := make([]map[string]any, n)
	for i := range recs {
		recs[i] = record(fmt.Sprintf("BENCH-%06d", i), "Debian:12", pkgs[i%len(pkgs)], ev("introduced", "0"), ev("fixed", fmt.Sprintf("1:%d.0-1", i)))
	}
	dir := writeFeed(b, recs...)
	installed, _ := fixturePackages(b)
	b.ResetTimer()
	for b.Loop() {
		feed, err := vulnscan.LoadFeed(dir)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := vulnscan.Match(installed, feed, "Debian:12"); err != nil {
			b.Fatal(err)
		}
	}
}
