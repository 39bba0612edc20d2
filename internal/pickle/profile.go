package pickle

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/reprolab/repro/internal/strictjson"
)

// Profile is an allowlist: which containers, opcodes, globals, classes and
// top-level structure a file may have. Profiles are data (profiles.json,
// compiled in); the code only knows how to implement the globals inertly.
type Profile struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Formats are the containers accepted at the top level: "pickle"
	// (a plain pickle.dump), "torch-zip", "torch-legacy".
	Formats []string `json:"formats"`
	// Opcodes are pickletools names allowed in the top-level pickle.
	Opcodes []string `json:"opcodes"`
	// Globals are module.name references with an inert implementation
	// that may be called.
	Globals []string `json:"globals"`
	// ModuleClasses are torch.nn classes that may be instantiated (NEWOBJ)
	// and given state (BUILD) as inert module objects.
	ModuleClasses []string `json:"module_classes"`
	// StorageTypes are the torch.<X>Storage classes storages may have.
	StorageTypes []string `json:"storage_types"`
	// Persistent configures persistent-class records; nil forbids them.
	Persistent *PersistentRule `json:"persistent"`
	// Root is the required top-level structure.
	Root RootRule `json:"root"`

	opcodes  [256]bool
	globals  map[string]bool
	modules  map[string]bool
	storages map[string]bool
}

// PersistentRule constrains torch_utils.persistence records.
type PersistentRule struct {
	Versions []int64 `json:"versions"`
	// Classes are the admitted class names; nil admits any.
	Classes []string `json:"classes"`
}

// RootRule describes the top-level value.
type RootRule struct {
	// Kind is "snapshot" (a dict holding the exported module under
	// Export), "module" (the top-level value is the module) or
	// "state-dict" (a mapping of tensor names to tensors).
	Kind   string `json:"kind"`
	Export string `json:"export,omitempty"`
	// Classes are the admitted class names of the exported module; nil
	// admits any.
	Classes []string `json:"classes"`
}

// Profile names compiled in.
const (
	ProfileEDMCheckpoint     = "edm-checkpoint"
	ProfileInceptionDetector = "inception-detector"
	ProfileTorchStateDict    = "torch-state-dict"
)

// Container formats.
const (
	FormatPickle      = "pickle"
	FormatTorchZip    = "torch-zip"
	FormatTorchLegacy = "torch-legacy"
)

//go:embed profiles.json
var profilesJSON []byte

var builtinProfiles = sync.OnceValues(func() (map[string]*Profile, error) {
	var doc struct {
		Profiles []json.RawMessage `json:"profiles"`
	}
	if err := json.Unmarshal(profilesJSON, &doc); err != nil {
		return nil, fmt.Errorf("compiled-in profiles: %v", err)
	}
	m := make(map[string]*Profile)
	for _, raw := range doc.Profiles {
		p, err := ParseProfile(raw)
		if err != nil {
			return nil, fmt.Errorf("compiled-in profiles: %v", err)
		}
		if m[p.Name] != nil {
			return nil, fmt.Errorf("compiled-in profiles: %s defined twice", p.Name)
		}
		m[p.Name] = p
	}
	return m, nil
})

// LookupProfile returns the compiled-in profile with the given name.
func LookupProfile(name string) (*Profile, error) {
	m, err := builtinProfiles()
	if err != nil {
		return nil, err
	}
	if p := m[name]; p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("unknown profile %q (known: %s)", name, strings.Join(ProfileNames(), ", "))
}

// ProfileNames lists the compiled-in profiles.
func ProfileNames() []string {
	m, _ := builtinProfiles()
	return sortedStrings(m)
}

// ParseProfile parses and validates one profile in the JSON form of
// profiles.json. Unknown fields, unknown opcodes, globals without an inert
// implementation and malformed names are errors.
func ParseProfile(data []byte) (*Profile, error) {
	var p Profile
	if err := strictjson.Decode(data, &p); err != nil {
		return nil, fmt.Errorf("invalid profile: %v", err)
	}
	if err := p.init(); err != nil {
		return nil, fmt.Errorf("invalid profile %q: %v", p.Name, err)
	}
	return &p, nil
}

func (p *Profile) init() error {
	if p.Name == "" {
		return fmt.Errorf("no name")
	}
	for _, f := range p.Formats {
		if f != FormatPickle && f != FormatTorchZip && f != FormatTorchLegacy {
			return fmt.Errorf("unknown format %q", f)
		}
	}
	if len(p.Formats) == 0 {
		return fmt.Errorf("no formats")
	}
	for _, n := range p.Opcodes {
		op, ok := opByName[n]
		if !ok {
			return fmt.Errorf("unknown opcode %q", n)
		}
		p.opcodes[op] = true
	}
	if !p.opcodes[opStop] {
		return fmt.Errorf("STOP must be allowed")
	}
	p.globals = make(map[string]bool)
	for _, g := range p.Globals {
		if impls[g] == nil {
			return fmt.Errorf("global %s has no inert implementation", g)
		}
		p.globals[g] = true
	}
	p.modules = make(map[string]bool)
	for _, c := range p.ModuleClasses {
		mod, name, ok := splitGlobal(c)
		if !ok || checkModuleName(mod) != nil || checkAttrName(name) != nil || impls[c] != nil {
			return fmt.Errorf("invalid module class %q", c)
		}
		p.modules[c] = true
	}
	p.storages = make(map[string]bool)
	for _, s := range p.StorageTypes {
		if _, ok := storageDTypes[s]; !ok {
			return fmt.Errorf("unknown storage type %q", s)
		}
		p.storages[s] = true
	}
	if p.globals["torch_utils.persistence._reconstruct_persistent_obj"] != (p.Persistent != nil) {
		return fmt.Errorf("persistent rule and _reconstruct_persistent_obj must come together")
	}
	switch p.Root.Kind {
	case "snapshot":
		if p.Root.Export == "" {
			return fmt.Errorf("snapshot root needs an export key")
		}
	case "module", "state-dict":
		if p.Root.Export != "" {
			return fmt.Errorf("%s root takes no export key", p.Root.Kind)
		}
	default:
		return fmt.Errorf("unknown root kind %q", p.Root.Kind)
	}
	return nil
}

func (p *Profile) allowsFormat(f string) bool {
	for _, x := range p.Formats {
		if x == f {
			return true
		}
	}
	return false
}

func (p *Profile) allowsPersistentClass(name string) bool {
	return p.Persistent != nil && (p.Persistent.Classes == nil || contains(p.Persistent.Classes, name))
}

func (p *Profile) allowsPersistentVersion(v int64) bool {
	if p.Persistent == nil {
		return false
	}
	for _, x := range p.Persistent.Versions {
		if x == v {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// AllowedGlobals lists every global the profile allows, sorted.
func (p *Profile) AllowedGlobals() []string {
	var all []string
	all = append(all, p.Globals...)
	all = append(all, p.ModuleClasses...)
	all = append(all, p.StorageTypes...)
	sort.Strings(all)
	return all
}
