package exitcode

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestOf(t *testing.T) {
	base := errors.New("x")
	for _, tc := range []struct {
		err  error
		want Code
	}{
		{nil, OK},
		{base, Negative},
		{New(Precondition, base), Precondition},
		{fmt.Errorf("wrapped: %w", New(Integrity, base)), Integrity},
		{errors.Join(base, New(Usage, base)), Usage},
		{New(Usage, nil), OK},
	} {
		if got := Of(tc.err); got != tc.want {
			t.Errorf("Of(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if e := Errorf(Integrity, "bad %d", 1); e.Error() != "bad 1" || !errors.Is(New(Integrity, base), base) {
		t.Fatal("message or unwrap broken")
	}
}

// TestREADMETable keeps the README's exit code table and these constants
// one truth: the same codes in the same order, and a corrupt blob under
// Integrity (what `repro verify` returns), not under Negative.
func TestREADMETable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "## Exit codes\n")
	if !ok {
		t.Fatal("README.md has no \"## Exit codes\" section")
	}
	rows := map[Code]string{}
	var order []Code
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(cells[1]))
		if err != nil {
			continue
		}
		rows[Code(n)] = cells[2]
		order = append(order, Code(n))
	}
	want := []Code{OK, Negative, Usage, Precondition, Integrity}
	if !slices.Equal(order, want) {
		t.Fatalf("README lists exit codes %v; want %v", order, want)
	}
	if strings.Contains(rows[Negative], "corrupt") || !strings.Contains(rows[Integrity], "corrupt stored blob") {
		t.Errorf("README: a corrupt blob must be exit %d (integrity), not %d:\n1:%s\n4:%s", Integrity, Negative, rows[Negative], rows[Integrity])
	}
}
