package strictjson

import (
	"errors"
	"strings"
	"testing"
)

type doc struct {
	Name string `json:"name"`
}

func TestDecode(t *testing.T) {
	var d doc
	if err := Decode([]byte(" {\"name\":\"a\"} \n"), &d); err != nil || d.Name != "a" {
		t.Fatalf("valid document: %v %+v", err, d)
	}
	for name, tc := range map[string]struct {
		in   string
		want string
	}{
		"unknown field":    {`{"name":"a","extra":1}`, "unknown field"},
		"second value":     {`{"name":"a"} {"name":"b"}`, ErrTrailing.Error()},
		"trailing garbage": {`{"name":"a"}x`, ErrTrailing.Error()},
		"trailing bracket": {`{"name":"a"}]`, ErrTrailing.Error()},
		"empty":            {``, "EOF"},
		"truncated":        {`{"name":`, "unexpected EOF"},
		"wrong type":       {`{"name":1}`, "cannot unmarshal"},
	} {
		var d doc
		err := Decode([]byte(tc.in), &d)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, tc.want)
		}
		if strings.Contains(tc.want, "trailing") && !errors.Is(err, ErrTrailing) {
			t.Errorf("%s: %v is not ErrTrailing", name, err)
		}
	}
}
