package sandbox

import "context"

// RuntimeShown is the runtime the next sandboxed run of a home uses, and
// a note for people on why ("" for none).
type RuntimeShown struct {
	Runtime Runtime
	Note    string
}

// ShowRuntime is `repro sandbox runtime [RUNTIME]`: with set (at most one
// runtime name) it first stores that runtime as home's setting (an
// unknown name is refused by ParseRuntime); then it returns home's
// setting, or, with none, the runtime the engine's host gets by default
// (ConnectChosen, whose errors it returns: no engine is exit 3) with its
// reason.
func ShowRuntime(ctx context.Context, home string, set []string) (*RuntimeShown, error) {
	if len(set) == 1 {
		rt, err := ParseRuntime(set[0])
		if err != nil {
			return nil, err
		}
		if err := WriteSettings(home, Settings{Runtime: rt}); err != nil {
			return nil, err
		}
	}
	s, err := ReadSettings(home)
	if err != nil {
		return nil, err
	}
	if s.Runtime != "" {
		shown := &RuntimeShown{Runtime: s.Runtime}
		if s.Runtime == Runc {
			shown.Note = "a run under runc needs the trust file's waiver of each open known escape of the engine's runc, where it has any"
		}
		return shown, nil
	}
	e, err := ConnectChosen(ctx, home, "")
	if err != nil {
		return nil, err
	}
	defer e.Close()
	c := e.RuntimeFacts().Choice
	return &RuntimeShown{Runtime: c.Runtime, Note: "no runtime is set in REPRO_HOME: " + c.Reason}, nil
}
