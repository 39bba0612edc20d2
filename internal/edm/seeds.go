package edm

import (
	"fmt"
	"strconv"
	"strings"
)

// Seed limits: EDM reduces seeds modulo 2^32, so larger ones would alias.
const (
	MaxSeed  = 1<<32 - 1
	MaxSeeds = 1 << 20
)

// ParseSeeds reads a seed list in EDM's notation: comma-separated numbers
// and inclusive ranges, such as "0-49999" or "1,2,5-10". Seeds must be
// distinct and at most MaxSeed; at most MaxSeeds of them.
func ParseSeeds(s string) ([]int64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("invalid seed list %q: empty", s)
	}
	seen := make(map[int64]bool)
	var out []int64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseSeed(lo)
		if err != nil {
			return nil, fmt.Errorf("invalid seed list %q: %v", clipString(s), err)
		}
		b := a
		if isRange {
			if b, err = parseSeed(hi); err != nil {
				return nil, fmt.Errorf("invalid seed list %q: %v", clipString(s), err)
			}
			if b < a {
				return nil, fmt.Errorf("invalid seed list %q: range %s runs backwards", clipString(s), part)
			}
		}
		if b-a+1 > int64(MaxSeeds-len(out)) {
			return nil, fmt.Errorf("invalid seed list %q: more than %d seeds", clipString(s), MaxSeeds)
		}
		for v := a; v <= b; v++ {
			if seen[v] {
				return nil, fmt.Errorf("invalid seed list %q: seed %d appears twice", clipString(s), v)
			}
			seen[v] = true
			out = append(out, v)
		}
	}
	return out, nil
}

func parseSeed(s string) (int64, error) {
	if s == "" || len(s) > 10 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a seed (a number 0 to %d)", clipString(s), int64(MaxSeed))
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v > MaxSeed {
		return 0, fmt.Errorf("%q is not a seed (a number 0 to %d)", clipString(s), int64(MaxSeed))
	}
	return v, nil
}

func clipString(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
