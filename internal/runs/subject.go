package runs

import (
	"strings"

	"github.com/reprolab/repro/internal/runlabel"
)

// Subject is a record's run subject: what the run ran on and scored, as
// the record's extra section states it. It is decoded once, when the
// record is (DecodeRecord, and the record a verification returns), from
// the members of extra under their exact names; a member of another JSON
// type than the one below is taken as absent. It is never written: the
// record's bytes are its Extra, as the workload wrote it, so a record
// reads and verifies as before.
//
// Everything in it is the record's claim, untrusted until the record
// verifies; only the label, model and sampling are bounded
// (runlabel.FromExtra).
type Subject struct {
	// Label, Model and Sampling are the run's label (defaulted as
	// runlabel.FromExtra says), model and sampling.
	runlabel.Subject
	// Dataset is extra.dataset: the dataset a scoring run scored.
	Dataset string
	// Benchmark is extra.benchmark: what an mllog or handoff run is of.
	Benchmark string
	// DatasetMD5 is extra.dataset_md5, the digest the dataset is known
	// by upstream.
	DatasetMD5 string
	// Engine is extra.engine, the scoring engine.
	Engine string
	// Canonical is extra.canonical: the run scored the canonical
	// solutions.
	Canonical bool
	// Samples is extra.samples, nil when extra holds no such object.
	Samples *Samples
	// Error is extra.error, the error the run ended with.
	Error string
}

// Samples is the samples a scoring run scored, as its record names them.
type Samples struct {
	// Path is where they were read from.
	Path string
	// SHA256 is their digest (of the file, or DigestSampleFolder of a
	// folder).
	SHA256 string
	// Format is "folder" for a samples folder.
	Format string
}

// subjectOf decodes the run subject from a record's extra section as
// strictjson decoded it (objects as map[string]any).
func subjectOf(extra any) Subject {
	s := Subject{Subject: runlabel.FromExtra(extra)}
	m, ok := extra.(map[string]any)
	if !ok {
		return s
	}
	s.Dataset, _ = m["dataset"].(string)
	s.Benchmark, _ = m["benchmark"].(string)
	s.DatasetMD5, _ = m["dataset_md5"].(string)
	s.Engine, _ = m["engine"].(string)
	s.Canonical, _ = m["canonical"].(bool)
	s.Error, _ = m["error"].(string)
	if sm, ok := m["samples"].(map[string]any); ok {
		s.Samples = &Samples{}
		s.Samples.Path, _ = sm["path"].(string)
		s.Samples.SHA256, _ = sm["sha256"].(string)
		s.Samples.Format, _ = sm["format"].(string)
	}
	return s
}

// Dataset names what the run ran on, as a decoded record (DecodeRecord)
// states it: its dataset (a scoring run), else its benchmark (mllog,
// handoff), else the ids of its catalog assets, joined by ", ".
func (r *Record) Dataset() string {
	if r.Subject.Dataset != "" {
		return r.Subject.Dataset
	}
	if r.Subject.Benchmark != "" {
		return r.Subject.Benchmark
	}
	ids := make([]string, 0, len(r.Assets))
	for _, a := range r.Assets {
		ids = append(ids, a.ID)
	}
	return strings.Join(ids, ", ")
}
