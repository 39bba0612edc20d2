package layout

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestPathsStayUnderHome(t *testing.T) {
	h := Home("/srv/repro")
	paths := append(h.StoreFolders(), h.Blob("ab"), h.Ref("humaneval"), h.Partial("ab"), h.PartialSource("ab"), h.Lock("fetch"),
		h.Quarantined("ab", 1), h.Run("humaneval-20260101T000000Z-00000000"), h.Keys(), h.ImagePin(), h.ImageCache(), h.Index(), h.RunIndex(), h.RunIndexLock(), h.Imports(), h.ImportRecord("humaneval-20260101T000000Z-00000000"))
	for _, p := range paths {
		if rel, err := filepath.Rel(string(h), p); err != nil || strings.HasPrefix(rel, "..") {
			t.Errorf("%q is not under %q", p, h)
		}
	}
	if got := h.Blob("ab"); got != "/srv/repro/blobs/sha256/ab" {
		t.Errorf("Blob = %q", got)
	}
}

func TestStateRefusesNamesThatLeaveTheFolder(t *testing.T) {
	h := Home("/srv/repro")
	for _, bad := range []string{"", ".", "..", "../keys", "a/b", ".hidden"} {
		if p, err := h.State(bad); err == nil {
			t.Errorf("State(%q) = %q, want an error", bad, p)
		}
	}
	if p, err := h.State("humaneval"); err != nil || p != "/srv/repro/state/humaneval" {
		t.Errorf("State(humaneval) = %q, %v", p, err)
	}
}

func TestDefaultHome(t *testing.T) {
	t.Setenv("REPRO_HOME", "rel/home")
	got, err := DefaultHome()
	if err != nil || !filepath.IsAbs(got) || !strings.HasSuffix(got, "rel/home") {
		t.Errorf("REPRO_HOME=rel/home: %q, %v", got, err)
	}
	t.Setenv("REPRO_HOME", "")
	t.Setenv("XDG_DATA_HOME", "/xdg")
	if got, _ := DefaultHome(); got != "/xdg/repro" {
		t.Errorf("XDG_DATA_HOME=/xdg: %q", got)
	}
}

func TestBoardLogRefusesNamesThatLeaveTheFolder(t *testing.T) {
	h := Home("/srv/repro")
	for _, bad := range []string{"", ".", "..", "../keys", "a/b", ".hidden"} {
		if p, err := h.BoardLog(bad); err == nil {
			t.Errorf("BoardLog(%q) = %q, want an error", bad, p)
		}
	}
	if p, err := h.BoardLog("humanevalplus-v0.1.10"); err != nil || p != "/srv/repro/boardlog/humanevalplus-v0.1.10" {
		t.Errorf("BoardLog = %q, %v", p, err)
	}
	if got := h.BoardLogKey(); got != "/srv/repro/keys/board-log.key" {
		t.Errorf("BoardLogKey = %q", got)
	}
}
