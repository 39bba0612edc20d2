package ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

func TestMessageTagsEveryLine(t *testing.T) {
	var out bytes.Buffer
	term := New(&out, &bytes.Buffer{}, true)
	if err := term.Message(MessageProgress, struct {
		ID    string `json:"id"`
		Bytes int64  `json:"bytes"`
	}{"a<b", 3}); err != nil {
		t.Fatal(err)
	}
	if err := term.Message(MessageSummary, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if err := term.Message(MessageSummary, []int{1}); err == nil {
		t.Error("a message that is not an object was written")
	}
	want := `{"message_type":"progress","id":"a<b","bytes":3}` + "\n" + `{"message_type":"summary"}` + "\n"
	if out.String() != want {
		t.Errorf("got %q; want %q", out.String(), want)
	}
}

func TestReportError(t *testing.T) {
	err := exitcode.Errorf(exitcode.Integrity, "blob %q is corrupt", "a\nb")
	var text, js bytes.Buffer
	if code := ReportError(&text, err, false); code != exitcode.Integrity {
		t.Errorf("text: code %d", code)
	}
	if got := text.String(); got != `repro: blob "a\nb" is corrupt`+"\n" {
		t.Errorf("text: %q", got)
	}
	if code := ReportError(&js, err, true); code != exitcode.Integrity {
		t.Errorf("json: code %d", code)
	}
	var m struct {
		Type  string `json:"message_type"`
		Error string `json:"error"`
		Code  int    `json:"exit_code"`
	}
	if strings.Count(js.String(), "\n") != 1 || json.Unmarshal(js.Bytes(), &m) != nil ||
		m.Type != MessageExitError || m.Error != err.Error() || m.Code != 4 {
		t.Errorf("json: %q", js.String())
	}
	if code := ReportError(&js, errors.New("plain"), true); code != exitcode.Negative {
		t.Errorf("plain error: code %d", code)
	}
	var none bytes.Buffer
	if code := ReportError(&none, nil, true); code != exitcode.OK || none.Len() != 0 {
		t.Errorf("nil error: code %d, wrote %q", code, none.String())
	}
}

func TestNoTerminalNoStatus(t *testing.T) {
	var out, errb bytes.Buffer
	term := New(&out, &errb, false)
	term.Status("half way")
	term.StatusDone("done")
	term.StageProgress()("scoring", 1, 2)
	if term.Log() != nil || out.Len()+errb.Len() != 0 {
		t.Errorf("progress was drawn without a terminal: %q %q", out.String(), errb.String())
	}
}

func TestHumanTextLeavesStdoutToJSON(t *testing.T) {
	var out, errb bytes.Buffer
	term := New(&out, &errb, true)
	term.Printf("for people\n")
	term.Warnf("careful with %q", "x\x1b[2J")
	if out.Len() != 0 {
		t.Errorf("stdout under --json holds text: %q", out.String())
	}
	if want := "for people\nrepro: warning: careful with \"x\\x1b[2J\"\n"; errb.String() != want {
		t.Errorf("stderr %q; want %q", errb.String(), want)
	}
	out.Reset()
	New(&out, &errb, false).Printf("result\n")
	if out.String() != "result\n" {
		t.Errorf("stdout without --json: %q", out.String())
	}
}

func TestTable(t *testing.T) {
	var out bytes.Buffer
	err := New(&out, &bytes.Buffer{}, false).Table([][]string{{"ID", "STATUS"}, {"a\tb", "ok"}, {"long-id", "x\ny"}})
	want := "ID       STATUS\na\\tb     ok\nlong-id  x\\ny\n"
	if err != nil || out.String() != want {
		t.Errorf("got %q, %v; want %q", out.String(), err, want)
	}
}
