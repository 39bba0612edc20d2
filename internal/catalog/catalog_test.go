package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

func TestEmbeddedCatalog(t *testing.T) {
	c := Default()
	for _, id := range []string{"humanevalplus-v0.1.10", "humanevalplus-mini-v0.1.10", "humaneval", "mbppplus-v0.2.0"} {
		e, err := c.Lookup(id)
		if err != nil {
			t.Fatal(err)
		}
		if !e.IsPinned() || e.Size <= 0 || e.SHA256 == nil || e.Kind != Dataset {
			t.Fatalf("%s: not a pinned dataset: %+v", id, e)
		}
	}
	for _, id := range []string{"edm-cifar10-32x32-cond-vp", "edm-cifar10-32x32-uncond-vp", "edm-ffhq-64x64-uncond-vp",
		"edm-afhqv2-64x64-uncond-vp", "edm-imagenet-64x64-cond-adm", "inception-2015-12-05", "fid-ref-cifar10-32x32"} {
		e, err := c.Lookup(id)
		if err != nil {
			t.Fatal(err)
		}
		if e.IsPinned() {
			t.Fatalf("%s is pinned, but NVIDIA publishes no digest", id)
		}
		err = e.RequirePinned()
		if exitcode.Of(err) != exitcode.Precondition || !errors.Is(err, ErrUnpinned) || !strings.Contains(err.Error(), "repro catalog review "+id) {
			t.Fatalf("%s: RequirePinned = %v", id, err)
		}
	}
	if _, err := c.Lookup("nope"); exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("unknown id: %v", err)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	b, err := Default().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := c.Marshal()
	if !bytes.Equal(b, b2) {
		t.Fatal("catalog does not round-trip")
	}
}

func TestParseRejects(t *testing.T) {
	good := `{"id":"x","kind":"dataset","description":"d","license":"l","pin":"pinned","size":1,"urls":["https://h/x"],"sha256":"` + strings.Repeat("a", 64) + `"}`
	if _, err := Parse([]byte(`{"entries":[` + good + `]}`)); err != nil {
		t.Fatalf("good entry rejected: %v", err)
	}
	for name, doc := range map[string]string{
		"unknown field":     `{"entries":[{"id":"x","bogus":1}]}`,
		"trailing data":     `{"entries":[` + good + `]} {}`,
		"duplicate":         `{"entries":[` + good + `,` + good + `]}`,
		"bad id":            strings.Replace(`{"entries":[`+good+`]}`, `"id":"x"`, `"id":"../x"`, 1),
		"bad kind":          strings.Replace(`{"entries":[`+good+`]}`, `"dataset"`, `"weird"`, 1),
		"http url":          strings.Replace(`{"entries":[`+good+`]}`, `https://h/x`, `http://h/x`, 1),
		"creds in url":      strings.Replace(`{"entries":[`+good+`]}`, `https://h/x`, `https://u:p@h/x`, 1),
		"short digest":      strings.Replace(`{"entries":[`+good+`]}`, strings.Repeat("a", 64), "abc", 1),
		"upper hex":         strings.Replace(`{"entries":[`+good+`]}`, strings.Repeat("a", 64), strings.Repeat("A", 64), 1),
		"pinned no size":    strings.Replace(`{"entries":[`+good+`]}`, `"size":1,`, ``, 1),
		"unpinned w/ pin":   strings.Replace(`{"entries":[`+good+`]}`, `"pin":"pinned"`, `"pin":"unpinned"`, 1),
		"bad pin":           strings.Replace(`{"entries":[`+good+`]}`, `"pin":"pinned"`, `"pin":"maybe"`, 1),
		"filename path":     strings.Replace(`{"entries":[`+good+`]}`, `"pin"`, `"filename":"../etc/passwd","pin"`, 1),
		"not json":          `entries:`,
		"tree without pin":  `{"entries":[{"id":"t","kind":"source-tree","description":"d","license":"l","pin":"pinned"}]}`,
		"tree with sha256":  `{"entries":[{"id":"t","kind":"source-tree","description":"d","license":"l","pin":"pinned","tree_digest":"` + strings.Repeat("b", 64) + `","sha256":"` + strings.Repeat("b", 64) + `"}]}`,
		"negative size":     strings.Replace(`{"entries":[`+good+`]}`, `"size":1`, `"size":-1`, 1),
		"empty description": strings.Replace(`{"entries":[`+good+`]}`, `"description":"d"`, `"description":" "`, 1),
	} {
		if _, err := Parse([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzParse(f *testing.F) {
	b, _ := Default().Marshal()
	f.Add(b)
	f.Add([]byte(`{"entries":[]}`))
	f.Add([]byte(`{"entries":[{"id":"t","kind":"source-tree","description":"d","license":"l","pin":"pinned","tree_digest":"` + strings.Repeat("b", 64) + `"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		// Whatever parses must re-marshal to a document that parses to the
		// same entries.
		out, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		c2, err := Parse(out)
		if err != nil {
			t.Fatalf("re-marshalled catalog rejected: %v", err)
		}
		a, _ := json.Marshal(c.Entries())
		b, _ := json.Marshal(c2.Entries())
		if !bytes.Equal(a, b) {
			t.Fatal("entries changed across a round trip")
		}
	})
}
