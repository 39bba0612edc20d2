package runs

import (
	"strings"
	"testing"
)

func TestImportedID(t *testing.T) {
	keyA, keyB := strings.Repeat("a1", 32), strings.Repeat("b2", 32)
	orig := "humaneval-20261201T225716Z-cd830285"
	a, err := ImportedID(orig, keyA)
	if err != nil || a != "humaneval-a1a1a1a1a1a1a1a1-20261201T225716Z-cd830285" {
		t.Fatalf("ImportedID: %q %v", a, err)
	}
	if o, k, ok := SplitImportedID(a); !ok || o != orig || k != keyA[:16] {
		t.Errorf("SplitImportedID(%q): %q %q %v", a, o, k, ok)
	}
	if _, _, ok := SplitImportedID(orig); ok {
		t.Errorf("a local run id reads as an imported one")
	}
	// A signer cannot name a run so that its imported id is another
	// signer's: the digits before the time are always the signer's.
	short := "he-20261201T225716Z-cd830285"
	squat, err := ImportedID("he-b2b2b2b2b2b2b2b2-20261201T225716Z-cd830285", keyA)
	b, _ := ImportedID(short, keyB)
	if err != nil || squat == b || b != "he-b2b2b2b2b2b2b2b2-20261201T225716Z-cd830285" {
		t.Errorf("squat %q, genuine %q (%v)", squat, b, err)
	}
	if o, k, _ := SplitImportedID(squat); o != "he-b2b2b2b2b2b2b2b2-20261201T225716Z-cd830285" || k != keyA[:16] {
		t.Errorf("the squatting run reads as %q signed by %q", o, k)
	}
	for _, bad := range [][2]string{{"../x", keyA}, {orig, "zz"}, {orig, strings.Repeat("G", 64)}, {strings.Repeat("k", 30) + "-20261201T225716Z-cd830285", keyA}} {
		if id, err := ImportedID(bad[0], bad[1]); err == nil {
			t.Errorf("ImportedID(%q, %q) = %q, want an error", bad[0], bad[1], id)
		}
	}
}
