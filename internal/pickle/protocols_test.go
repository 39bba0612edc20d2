package pickle

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/testenv"
)

// plainProfile allows every opcode and no global: plain data only.
func plainProfile(t testing.TB) *Profile {
	t.Helper()
	var ops []string
	for _, o := range opTable {
		if o.name != "" {
			ops = append(ops, `"`+o.name+`"`)
		}
	}
	p, err := ParseProfile([]byte(`{"name": "plain", "formats": ["pickle"], "opcodes": [` + strings.Join(ops, ",") + `],
		"globals": [], "module_classes": [], "storage_types": [], "persistent": null, "root": {"kind": "state-dict"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// requirePython returns Debian's interpreter; without it the test stops
// (testenv.Missing).
func requirePython(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(systemPython); err != nil {
		testenv.Missing(t, systemPython, "install python3")
	}
	return systemPython
}

// TestProtocolsMatchCPython decodes what CPython's pickle writes for plain
// data with protocols 0 to 5 and compares the result with CPython's own.
func TestProtocolsMatchCPython(t *testing.T) {
	py := requirePython(t)
	out, err := exec.Command(py, "testdata/protocols.py").Output()
	if err != nil {
		t.Fatalf("protocols.py: %v", err)
	}
	p := plainProfile(t)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	n := 0
	for sc.Scan() {
		var c struct {
			Protocol int             `json:"protocol"`
			Pickle   string          `json:"pickle"`
			JSON     json.RawMessage `json:"json"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		data, _ := base64.StdEncoding.DecodeString(c.Pickle)
		s := newSession(p, data, true)
		v, err := s.decodeTop(data)
		if err != nil {
			t.Errorf("protocol %d: %v (pickle %q)", c.Protocol, err, clip(string(data)))
			continue
		}
		got, err := InertJSON(v)
		if string(c.JSON) == `"unrenderable"` {
			if err == nil {
				t.Errorf("protocol %d: rendered %s, want an error", c.Protocol, clip(string(got)))
			}
			continue
		}
		if err != nil {
			t.Errorf("protocol %d: %v", c.Protocol, err)
			continue
		}
		if !sameJSON(t, got, c.JSON) {
			t.Errorf("protocol %d: decoded %s, CPython pickled %s", c.Protocol, clip(string(got)), clip(string(c.JSON)))
		}
		n++
	}
	t.Logf("%d pickles compared with CPython", n)
	if n < 250 {
		t.Fatalf("only %d cases compared", n)
	}
}

// sameJSON compares two JSON documents, numbers by value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	for _, p := range []struct {
		in  []byte
		out *any
	}{{a, &x}, {b, &y}} {
		d := json.NewDecoder(bytes.NewReader(p.in))
		d.UseNumber()
		if err := d.Decode(p.out); err != nil {
			t.Fatalf("%s: %v", clip(string(p.in)), err)
		}
	}
	return reflect.DeepEqual(normalizeNumbers(x), normalizeNumbers(y))
}

func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, ok := new(big.Int).SetString(string(x), 10); ok {
			return "i" + i.String()
		}
		f, _ := new(big.Float).SetString(string(x))
		if f == nil {
			return "bad number " + string(x)
		}
		return "f" + f.Text('g', 20)
	case []any:
		for i := range x {
			x[i] = normalizeNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalizeNumbers(x[k])
		}
	}
	return v
}
