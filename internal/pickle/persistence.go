package pickle

import (
	"unsafe"

	"github.com/reprolab/repro/internal/digest"
)

// persistentMetaKeys are the keys of the meta dict a persistent-class
// record carries; any other key is refused.
var persistentMetaKeys = []string{"type", "version", "module_src", "class_name", "state"}

// callReconstructPersistent implements
// torch_utils.persistence._reconstruct_persistent_obj(meta) inertly: it
// records the class name, version, the module source and its SHA-256, and
// the state. The source is never compiled or run.
func callReconstructPersistent(m *machine, args Tuple) Value {
	if len(args) != 1 {
		m.fail("_reconstruct_persistent_obj takes 1 argument, got %d", len(args))
		return None{}
	}
	meta, ok := args[0].(*Dict)
	if !ok {
		m.fail("_reconstruct_persistent_obj argument is a %s, not a dict", typeName(args[0]))
		return None{}
	}
	keys, ok := meta.StringKeys()
	if !ok || len(keys) != len(persistentMetaKeys) {
		m.violate("persistent-class record has keys other than %v", persistentMetaKeys)
		return None{}
	}
	for _, k := range persistentMetaKeys {
		if _, ok := meta.Get(k); !ok {
			m.violate("persistent-class record lacks %q", k)
			return None{}
		}
	}
	typ, _ := meta.Get("type")
	ver, _ := meta.Get("version")
	src, _ := meta.Get("module_src")
	cls, _ := meta.Get("class_name")
	state, _ := meta.Get("state")
	p := &Persistent{State: state}
	var ok1, ok2, ok3, ok4 bool
	p.Type, ok1 = typ.(string)
	p.Version, ok2 = ver.(int64)
	p.ModuleSrc, ok3 = src.(string)
	p.ClassName, ok4 = cls.(string)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		m.fail("persistent-class record has a field of the wrong type")
		return None{}
	}
	if p.Type != "class" {
		m.violate("persistent-class record of type %q (only 'class' is supported)", p.Type)
	}
	if !isIdent(p.ClassName) {
		m.violate("persistent class name %q is not an identifier", clip(p.ClassName))
	} else if !m.s.profile.allowsPersistentClass(p.ClassName) {
		m.violate("persistent class %s is not allowed by profile %s", p.ClassName, m.s.profile.Name)
	}
	if !m.s.profile.allowsPersistentVersion(p.Version) {
		m.violate("persistence version %d is not allowed by profile %s", p.Version, m.s.profile.Name)
	}
	if _, ok := state.(*Dict); !ok {
		if _, none := state.(None); !none {
			m.violate("persistent %s has state of type %s", p.ClassName, typeName(state))
		}
	}
	p.SourceSHA256 = m.s.sourceDigest(p.ModuleSrc)
	m.s.recordPersistent(p)
	m.charge(128)
	return p
}

// sourceDigest hashes an embedded module source once per string: sources
// are shared through the memo, so identity is what repeats, and looking up
// by identity costs nothing however long the text is.
func (s *session) sourceDigest(src string) digest.SHA256 {
	key := strKey{unsafe.StringData(src), len(src)}
	if d, ok := s.srcDigests[key]; ok {
		return d
	}
	d := digest.Of([]byte(src))
	s.srcDigests[key] = d
	return d
}

// strKey identifies a string by its bytes' address and length.
type strKey struct {
	p *byte
	n int
}
