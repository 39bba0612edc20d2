package pickle

import (
	"fmt"
	"strconv"
)

// Walks over the object graph are bounded in depth and in visits, so that
// cycles and exponential sharing (a list holding itself, lists of lists of
// the same list) end with an error instead of exhausting the machine.
const (
	maxWalkDepth     = 256
	maxWalkVisits    = 1 << 22
	maxWalkNameBytes = 64 << 20
)

// NamedTensor is a tensor with its state_dict name.
type NamedTensor struct {
	Name string
	*Tensor
}

type walker struct {
	visits    int
	nameBytes int
	out       []NamedTensor
	names     map[string]bool
	unique    bool // duplicate names are an error (state_dict export)
	inputSize int  // scales the walk's limits to the input when set

	// listing walks for a scan report: each container once (seen), and at
	// most maxReportTensors tensors listed.
	listing  bool
	seen     map[any]bool
	elided   int64 // containers reached again and not walked again
	unlisted int64 // tensors beyond maxReportTensors
}

// limits returns the walk's bounds on visits and name bytes: the
// constants, or less for a small input (inputSize set), so that a module
// graph that shares submodules at every level (2^depth paths from a few
// kilobytes) costs work in proportion to the input.
func (w *walker) limits() (visits, names int) {
	if w.inputSize == 0 {
		return maxWalkVisits, maxWalkNameBytes
	}
	return min(maxWalkVisits, w.inputSize/2+1<<16), min(maxWalkNameBytes, 8*w.inputSize+1<<20)
}

// maxReportTensors bounds the tensors a scan report lists.
const maxReportTensors = 1 << 16

// again reports, when listing, whether container v was walked before, and
// counts the repeat. Shared structure (the memo lets a pickle reference a
// list from many places, nested) is walked once, so a report grows with
// the input, not with the number of paths through it.
func (w *walker) again(v Value) bool {
	if !w.listing {
		return false
	}
	var id any
	switch x := v.(type) {
	case *Dict, *List, *Object, *Persistent:
		id = x
	case Tuple:
		if len(x) == 0 {
			return false
		}
		id = tupleID{&x[0], len(x)}
	default:
		return false
	}
	if w.seen == nil {
		w.seen = make(map[any]bool)
	}
	if w.seen[id] {
		w.elided++
		return true
	}
	w.seen[id] = true
	return false
}

func (w *walker) visit(depth int) error {
	if depth > maxWalkDepth {
		return fmt.Errorf("object graph nested deeper than %d (or cyclic)", maxWalkDepth)
	}
	visits, names := w.limits()
	if w.visits++; w.visits > visits {
		return fmt.Errorf("object graph has more than %d references to walk", visits)
	}
	if w.nameBytes > names {
		return fmt.Errorf("tensor names exceed %d bytes", names)
	}
	return nil
}

func (w *walker) add(name string, t *Tensor) error {
	if w.listing && len(w.out) >= maxReportTensors {
		w.unlisted++
		return nil
	}
	if err := w.name(name); err != nil {
		return err
	}
	if w.unique {
		if w.names == nil {
			w.names = make(map[string]bool)
		}
		if w.names[name] {
			return fmt.Errorf("tensor name %q occurs twice", name)
		}
		w.names[name] = true
	}
	w.out = append(w.out, NamedTensor{Name: name, Tensor: t})
	return nil
}

// name accounts for a built name: tensor names and module prefixes grow
// with the path, and shared long keys could make them huge.
func (w *walker) name(s string) error {
	_, names := w.limits()
	if w.nameBytes += len(s); w.nameBytes > names {
		return fmt.Errorf("tensor names exceed %d bytes", names)
	}
	return nil
}

// moduleState returns the attribute dict of a torch.nn.Module-like value:
// a persistent object or an inert module-class object whose state has
// _parameters, _buffers and _modules.
func moduleState(v Value) (*Dict, bool) {
	var st Value
	switch x := v.(type) {
	case *Persistent:
		st = x.State
	case *Object:
		if x.Class == nil || x.Class.kind != kindModule {
			return nil, false
		}
		st = x.State
	default:
		return nil, false
	}
	d, ok := st.(*Dict)
	if !ok {
		return nil, false
	}
	for _, k := range []string{"_parameters", "_buffers", "_modules"} {
		if _, ok := d.Get(k); !ok {
			return nil, false
		}
	}
	return d, true
}

// stateDict appends what torch.nn.Module.state_dict() returns for v:
// parameters, then persistent buffers, then submodules, skipping None.
func (w *walker) stateDict(v Value, prefix string, depth int) error {
	if err := w.visit(depth); err != nil {
		return err
	}
	if w.again(v) {
		return nil
	}
	st, ok := moduleState(v)
	if !ok {
		return fmt.Errorf("%s is a %s, not a module", orRoot(prefix), typeName(v))
	}
	section := func(key string) (*Dict, error) {
		x, _ := st.Get(key)
		d, ok := x.(*Dict)
		if !ok {
			return nil, fmt.Errorf("%s%s is a %s, not a dict", prefix, key, typeName(x))
		}
		return d, nil
	}
	params, err := section("_parameters")
	if err != nil {
		return err
	}
	buffers, err := section("_buffers")
	if err != nil {
		return err
	}
	modules, err := section("_modules")
	if err != nil {
		return err
	}
	for _, h := range []string{"_state_dict_hooks", "_state_dict_pre_hooks"} {
		if x, ok := st.Get(h); ok {
			if d, ok := x.(*Dict); !ok || d.Len() != 0 {
				return fmt.Errorf("%s has state_dict hooks, whose effect cannot be reproduced without running them", orRoot(prefix))
			}
		}
	}
	var nonPersistent *Set
	if x, ok := st.Get("_non_persistent_buffers_set"); ok {
		if nonPersistent, ok = x.(*Set); !ok {
			return fmt.Errorf("%s_non_persistent_buffers_set is a %s", prefix, typeName(x))
		}
	}
	for i, k := range params.Keys {
		name, ok := k.(string)
		if !ok {
			return fmt.Errorf("%s_parameters has a %s key", prefix, typeName(k))
		}
		var t *Tensor
		switch p := params.Values[i].(type) {
		case None:
			continue
		case *Parameter:
			t = p.Data
		case *Tensor:
			t = p
		default:
			return fmt.Errorf("parameter %s%s is a %s", prefix, name, typeName(p))
		}
		if err := w.add(prefix+name, t); err != nil {
			return err
		}
	}
	for i, k := range buffers.Keys {
		name, ok := k.(string)
		if !ok {
			return fmt.Errorf("%s_buffers has a %s key", prefix, typeName(k))
		}
		switch b := buffers.Values[i].(type) {
		case None:
		case *Tensor:
			if !nonPersistent.Has(name) {
				if err := w.add(prefix+name, b); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("buffer %s%s is a %s", prefix, name, typeName(b))
		}
	}
	for i, k := range modules.Keys {
		name, ok := k.(string)
		if !ok {
			return fmt.Errorf("%s_modules has a %s key", prefix, typeName(k))
		}
		if _, ok := modules.Values[i].(None); ok {
			continue
		}
		sub := prefix + name + "."
		if err := w.name(sub); err != nil {
			return err
		}
		if err := w.stateDict(modules.Values[i], sub, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func orRoot(prefix string) string {
	if prefix == "" {
		return "the exported module"
	}
	return prefix[:len(prefix)-1]
}

// mapping appends the entries of a state_dict-like mapping of names to
// tensors (or parameters).
func (w *walker) mapping(v Value) error {
	d, ok := v.(*Dict)
	if !ok {
		return fmt.Errorf("top-level value is a %s, not a mapping of names to tensors", typeName(v))
	}
	for i, k := range d.Keys {
		name, ok := k.(string)
		if !ok {
			return fmt.Errorf("state_dict has a %s key", typeName(k))
		}
		switch t := d.Values[i].(type) {
		case *Tensor:
			if err := w.add(name, t); err != nil {
				return err
			}
		case *Parameter:
			if err := w.add(name, t.Data); err != nil {
				return err
			}
		default:
			return fmt.Errorf("state_dict entry %q is a %s, not a tensor", name, typeName(t))
		}
	}
	return nil
}

// all lists every tensor reachable from v, naming it by its path: dict
// keys and sequence indexes joined with dots, modules by state_dict names.
func (w *walker) all(v Value, path string, depth int) error {
	if err := w.visit(depth); err != nil {
		return err
	}
	join := func(k string) string {
		if path == "" {
			return k
		}
		j := path + "." + k
		w.nameBytes += len(j)
		return j
	}
	switch x := v.(type) {
	case *Tensor:
		return w.add(path, x)
	case *Parameter:
		return w.add(path, x.Data)
	case *Persistent:
		if _, ok := moduleState(x); ok {
			return w.stateDict(x, join(""), depth)
		}
		if w.again(x) {
			return nil
		}
		return w.all(x.State, path, depth+1)
	case *Object:
		if _, ok := moduleState(x); ok {
			return w.stateDict(x, join(""), depth)
		}
		if w.again(x) {
			return nil
		}
		for i, a := range x.Args {
			if err := w.all(a, join(strconv.Itoa(i)), depth+1); err != nil {
				return err
			}
		}
		return w.all(x.State, path, depth+1)
	case *Dict:
		if w.again(x) {
			return nil
		}
		for i, k := range x.Keys {
			ks, ok := k.(string)
			if !ok {
				ks = fmt.Sprintf("[%s]", typeName(k))
			}
			if err := w.all(x.Values[i], join(ks), depth+1); err != nil {
				return err
			}
		}
	case *List:
		if w.again(x) {
			return nil
		}
		for i, e := range x.Items {
			if err := w.all(e, join(strconv.Itoa(i)), depth+1); err != nil {
				return err
			}
		}
	case Tuple:
		if w.again(x) {
			return nil
		}
		for i, e := range x {
			if err := w.all(e, join(strconv.Itoa(i)), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}
