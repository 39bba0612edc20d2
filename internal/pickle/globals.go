package pickle

import (
	"fmt"
	"strconv"
	"strings"
)

// globalKind says what an allowed global may be used for.
type globalKind int

const (
	kindNone    globalKind = iota // not allowed
	kindCall                      // has an inert implementation; REDUCE only
	kindModule                    // torch.nn class; NEWOBJ and BUILD only
	kindStorage                   // torch.<X>Storage; a type marker only
)

// impl is the inert implementation of a callable global.
type impl struct {
	call func(m *machine, args Tuple) Value
}

// impls holds every global the decoder can implement without running code.
// A profile may allow only names listed here.
var impls map[string]*impl

func init() {
	impls = map[string]*impl{
		"collections.OrderedDict":                             {callOrderedDict},
		"torch._utils._rebuild_tensor_v2":                     {callRebuildTensorV2},
		"torch._utils._rebuild_parameter":                     {callRebuildParameter},
		"torch._utils._rebuild_parameter_with_state":          {callRebuildParameter},
		"torch.storage._load_from_bytes":                      {callLoadFromBytes},
		"torch_utils.persistence._reconstruct_persistent_obj": {callReconstructPersistent},
		"numpy.core.multiarray.scalar":                        {callNumpyScalar},
		"numpy._core.multiarray.scalar":                       {callNumpyScalar},
		"numpy.dtype":                                         {callNumpyDtype},
		"_codecs.encode":                                      {callCodecsEncode},
	}
}

// py2Modules renames the Python 2 module names that CPython's unpickler
// maps (fix_imports) in pickles of protocol 0 to 2, so that a report shows
// the module the name would really resolve to. None of them is allowed by
// any profile.
var py2Modules = map[string]string{
	"__builtin__": "builtins",
	"exceptions":  "builtins",
	"copy_reg":    "copyreg",
	"cPickle":     "pickle",
}

func isIdent(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

func checkModuleName(mod string) error {
	if len(mod) > 256 {
		return fmt.Errorf("module name longer than 256 bytes")
	}
	for _, part := range strings.Split(mod, ".") {
		if !isIdent(part) {
			return fmt.Errorf("module name is not a dotted sequence of identifiers")
		}
	}
	return nil
}

func checkAttrName(name string) error {
	if strings.Contains(name, ".") {
		return fmt.Errorf("name is a dotted attribute path")
	}
	if !isIdent(name) {
		return fmt.Errorf("name is not an identifier")
	}
	return nil
}

func splitGlobal(full string) (mod, name string, ok bool) {
	i := strings.LastIndexByte(full, '.')
	if i <= 0 || i == len(full)-1 {
		return "", "", false
	}
	return full[:i], full[i+1:], true
}

// global resolves module.name the way an unpickler's find_class would
// name it, without importing anything, and checks it against the profile.
func (m *machine) global(mod, name string) *Global {
	if m.err != nil {
		return nil
	}
	if m.proto < 3 {
		if r, ok := py2Modules[mod]; ok {
			mod = r
		}
	}
	m.charge(64)
	g := &Global{Module: mod, Name: name}
	if len(mod) > 256 || len(name) > 256 {
		shown := strconv.Quote(clip(mod) + "." + clip(name))
		m.violate("global %s: name longer than 256 bytes", shown)
		m.s.recordGlobal(shown, false)
		return g
	}
	full := mod + "." + name
	shown := full
	if !isIdentPath(full) {
		shown = strconv.Quote(full)
	}
	p := m.s.profile
	if err := checkModuleName(mod); err != nil {
		m.violate("global %s: %v", shown, err)
	} else if err := checkAttrName(name); err != nil {
		m.violate("global %s: %v", shown, err)
	} else {
		switch {
		case m.r.calls && p.globals[full]:
			g.Allowed, g.kind, g.impl = true, kindCall, impls[full]
		case m.r.calls && p.modules[full]:
			g.Allowed, g.kind = true, kindModule
		case m.r.storages && p.storages[full]:
			g.Allowed, g.kind = true, kindStorage
		default:
			m.violate("global %s is not allowed in a %s by profile %s", shown, m.r.what, p.Name)
		}
	}
	m.s.recordGlobal(shown, g.Allowed)
	return g
}

func isIdentPath(s string) bool {
	for _, p := range strings.Split(s, ".") {
		if !isIdent(p) {
			return false
		}
	}
	return true
}

// call applies REDUCE: the callable must be an allowed global with an inert
// implementation; anything else is recorded as an inert object.
func (m *machine) call(f, args Value) Value {
	t, ok := args.(Tuple)
	if !ok {
		m.fail("REDUCE arguments are a %s, not a tuple", typeName(args))
		return nil
	}
	m.charge(96)
	g, ok := f.(*Global)
	if !ok {
		m.violate("call of a %s (only allowed globals may be called)", typeName(f))
		return &Object{Func: f, How: "REDUCE", Args: t}
	}
	switch g.kind {
	case kindCall:
		return g.impl.call(m, t)
	case kindModule, kindStorage:
		m.violate("global %s may not be called", g)
	}
	return &Object{Class: g, How: "REDUCE", Args: t}
}

// instantiate applies NEWOBJ, NEWOBJ_EX, INST and OBJ.
func (m *machine) instantiate(cls, args Value, kwargs *Dict, how string) Value {
	g, ok := cls.(*Global)
	if !ok || g == nil {
		m.fail("%s class is a %s, not a class", how, typeName(cls))
		return nil
	}
	t, ok := args.(Tuple)
	if !ok {
		m.fail("%s arguments are a %s, not a tuple", how, typeName(args))
		return nil
	}
	m.charge(96)
	obj := &Object{Class: g, How: how, Args: t, Kwargs: kwargs}
	switch g.kind {
	case kindModule:
		if len(t) != 0 || (kwargs != nil && kwargs.Len() != 0) {
			m.violate("module class %s instantiated with arguments", g)
		}
	case kindCall, kindStorage:
		m.violate("global %s may not be instantiated", g)
	}
	return obj
}

// build applies BUILD: state goes onto inert module objects, OrderedDict
// attributes and numpy dtypes; everything else is refused.
func (m *machine) build(inst, state Value) {
	switch x := inst.(type) {
	case *Object:
		if x.Class == nil || x.Class.kind != kindModule {
			if x.Class == nil || x.Class.Allowed {
				m.violate("BUILD on a %s", typeName(inst))
			}
			x.State = state // kept for the report only
			return
		}
		d, ok := state.(*Dict)
		if !ok {
			m.violate("BUILD state of module %s is a %s, not a dict", x.Class, typeName(state))
			return
		}
		if _, ok := d.StringKeys(); !ok {
			m.violate("BUILD state of module %s has non-string keys", x.Class)
			return
		}
		merged, _ := x.State.(*Dict)
		if merged == nil {
			merged = &Dict{}
			x.State = merged
		}
		m.mergeInto(merged, d)
	case *Dict:
		if !x.Ordered {
			m.fail("BUILD on a plain dict")
			return
		}
		d, ok := state.(*Dict)
		if !ok {
			m.violate("BUILD state of an OrderedDict is a %s, not a dict", typeName(state))
			return
		}
		if _, ok := d.StringKeys(); !ok {
			m.violate("BUILD state of an OrderedDict has non-string keys")
			return
		}
		if x.Attrs == nil {
			x.Attrs = &Dict{}
		}
		m.mergeInto(x.Attrs, d)
	case *NumpyDtype:
		t, ok := state.(Tuple)
		if !ok || len(t) < 2 {
			m.violate("BUILD state of a numpy dtype is a %s, not a tuple", typeName(state))
			return
		}
		bo, _ := t[1].(string)
		if bo != "<" && bo != ">" && bo != "|" && bo != "=" {
			m.violate("numpy dtype byte order %q is not supported", bo)
			return
		}
		x.ByteOrder, x.State = bo, t
	default:
		m.violate("BUILD on a %s is not allowed", typeName(inst))
	}
}

func (m *machine) mergeInto(dst, src *Dict) {
	m.charge(int64(64 * src.Len()))
	for i := range src.Keys {
		n, err := dst.set(src.Keys[i], src.Values[i], m.s.budget)
		if err != nil {
			m.keyFailure(err)
			return
		}
		m.charge(int64(n))
	}
}

func callOrderedDict(m *machine, args Tuple) Value {
	d := &Dict{Ordered: true}
	m.charge(64)
	switch {
	case len(args) == 0:
	case len(args) == 1:
		l, ok := args[0].(*List)
		if !ok {
			m.violate("OrderedDict called with a %s", typeName(args[0]))
			return d
		}
		for _, it := range l.Items {
			var pair []Value
			switch p := it.(type) {
			case Tuple:
				pair = p
			case *List:
				pair = p.Items
			}
			if len(pair) != 2 {
				m.violate("OrderedDict item is not a pair")
				return d
			}
			m.setItems(d, pair)
		}
	default:
		m.violate("OrderedDict called with %d arguments", len(args))
	}
	return d
}

func callNumpyDtype(m *machine, args Tuple) Value {
	if len(args) != 3 {
		m.violate("numpy.dtype called with %d arguments", len(args))
		return None{}
	}
	name, ok := args[0].(string)
	if !ok {
		m.violate("numpy.dtype called with a %s", typeName(args[0]))
		return None{}
	}
	if k, _ := numpyKind(name); k == 0 {
		m.violate("numpy dtype %q is not supported", name)
		return None{}
	}
	m.charge(96)
	return &NumpyDtype{Name: name}
}

func callNumpyScalar(m *machine, args Tuple) Value {
	if len(args) != 2 {
		m.violate("numpy scalar built from %d arguments", len(args))
		return None{}
	}
	dt, ok1 := args[0].(*NumpyDtype)
	b, ok2 := args[1].(*Bytes)
	if !ok1 || !ok2 {
		m.violate("numpy scalar built from a %s and a %s", typeName(args[0]), typeName(args[1]))
		return None{}
	}
	if _, n := numpyKind(dt.Name); len(b.Data) != n {
		m.fail("numpy scalar of dtype %s holds %d bytes", dt.Name, len(b.Data))
		return None{}
	}
	m.charge(64)
	return &NumpyScalar{Dtype: dt, Data: b.Data}
}

// callCodecsEncode implements _codecs.encode(text, "latin1"), which
// protocol-2 pickles use to carry bytes.
func callCodecsEncode(m *machine, args Tuple) Value {
	if len(args) != 2 {
		m.violate("_codecs.encode called with %d arguments", len(args))
		return None{}
	}
	s, ok1 := args[0].(string)
	enc, ok2 := args[1].(string)
	if !ok1 || !ok2 || (enc != "latin1" && enc != "latin-1") {
		m.violate("_codecs.encode is only allowed as encode(str, 'latin1')")
		return None{}
	}
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			m.fail("_codecs.encode: text is not Latin-1")
			return None{}
		}
		out = append(out, byte(r))
	}
	m.charge(int64(len(out)) + 48)
	return &Bytes{Data: out, Offset: -1}
}
