package catalog

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestNaturalCompare(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"criteo-terabyte-day-2", "criteo-terabyte-day-10", -1},
		{"criteo-terabyte-day-10", "criteo-terabyte-day-2", 1},
		{"day-2", "day-2", 0},
		{"day-02", "day-2", 1},
		{"day-2", "day-2a", -1},
		{"a", "b", -1},
		{"x9", "xa", -1},
		{"edm-cifar10", "edm-afhqv2", 1},
		{"", "a", -1},
		{"99999999999999999999999", "100000000000000000000000", -1},
	} {
		if got := naturalCompare(c.a, c.b); got != c.want {
			t.Errorf("naturalCompare(%q, %q) = %d; want %d", c.a, c.b, got, c.want)
		}
	}
}

// TestEntriesAreInNaturalOrder checks the order catalog list prints: the
// Criteo days come 0, 1, 2, ... 23, not 0, 1, 10, 11, ...
func TestEntriesAreInNaturalOrder(t *testing.T) {
	var ids, days []string
	for _, e := range Default().Entries() {
		ids = append(ids, e.ID)
		if day, ok := strings.CutPrefix(e.ID, "criteo-terabyte-day-"); ok {
			days = append(days, day)
		}
	}
	if len(days) < 11 {
		t.Fatalf("the catalog holds %d Criteo days; want at least 11 for this test", len(days))
	}
	for i, d := range days {
		if d != strconv.Itoa(i) {
			t.Fatalf("Criteo days listed as %v; want 0, 1, 2, ...", days)
		}
	}
	if !slices.IsSortedFunc(ids, naturalCompare) {
		t.Errorf("Entries is not in natural order: %v", ids)
	}
}
