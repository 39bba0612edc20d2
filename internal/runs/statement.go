package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"

	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/strictjson"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// In-toto names of a run record. The DSSE envelope's payload is an
// in-toto Statement v1 (PayloadType) whose subjects are record.json and
// every other file of the run folder by SHA-256, and whose predicate, of
// type PredicateType, is the record itself.
const (
	PayloadType   = "application/vnd.in-toto+json"
	PredicateType = "https://reprolab.github.io/repro/run/v1"
)

// maxSubjects bounds the subjects a statement may list.
const maxSubjects = 1 << 20

// newStatement returns the signed payload of a run: subjects record.json
// (recordJSON, the bytes written to the folder) and files, predicate the
// record.
func newStatement(recordJSON []byte, files []File) ([]byte, error) {
	var pred map[string]any
	if err := json.Unmarshal(recordJSON, &pred); err != nil {
		return nil, err
	}
	ps, err := structpb.NewStruct(pred)
	if err != nil {
		return nil, fmt.Errorf("the record cannot be a predicate: %v", err)
	}
	subjects := append([]File{{Path: recordFile, SHA256: digest.Of(recordJSON).Hex()}}, files...)
	b, err := statementOf(subjects, PredicateType, ps)
	if err != nil {
		return nil, fmt.Errorf("the run's record: %w", err)
	}
	return b, nil
}

// statement is a decoded, checked run statement: subject digests by name
// and the predicate as generic JSON values.
type statement struct {
	subjects  map[string]string
	predicate map[string]any
}

// parseStatement decodes payload as an in-toto Statement v1 of a run
// record: the standard statement type, PredicateType, unique subject
// names each with a sha256 digest.
func parseStatement(payload []byte) (*statement, error) {
	var st intoto.Statement
	if err := (protojson.UnmarshalOptions{}).Unmarshal(payload, &st); err != nil {
		return nil, fmt.Errorf("the signed payload is not an in-toto statement: %v", err)
	}
	if st.GetType() != intoto.StatementTypeUri {
		return nil, fmt.Errorf("the signed statement has type %q, want %q", st.GetType(), intoto.StatementTypeUri)
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("the signed statement is invalid: %v", err)
	}
	if st.GetPredicateType() != PredicateType {
		return nil, fmt.Errorf("the signed statement has predicate type %q, want %q", st.GetPredicateType(), PredicateType)
	}
	if len(st.GetSubject()) > maxSubjects {
		return nil, fmt.Errorf("the signed statement lists %d subjects, at most %d", len(st.GetSubject()), maxSubjects)
	}
	out := &statement{subjects: map[string]string{}, predicate: st.GetPredicate().AsMap()}
	for _, s := range st.GetSubject() {
		h, ok := s.GetDigest()["sha256"]
		if s.GetName() == "" || !ok {
			return nil, errors.New("a subject of the signed statement has no name or no sha256 digest")
		}
		if _, dup := out.subjects[s.GetName()]; dup {
			return nil, fmt.Errorf("the signed statement lists subject %q twice", s.GetName())
		}
		out.subjects[s.GetName()] = h
	}
	return out, nil
}

// samePredicate reports whether recordJSON holds the same JSON values as
// the signed predicate.
func (s *statement) samePredicate(recordJSON []byte) bool {
	var rec map[string]any
	if err := strictjson.DecodeOpen(recordJSON, &rec); err != nil {
		return false
	}
	return reflect.DeepEqual(rec, s.predicate)
}

// names returns the subject names, sorted.
func (s *statement) names() []string {
	out := make([]string, 0, len(s.subjects))
	for n := range s.subjects {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
