package exitcode

import (
	"errors"
	"fmt"
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
