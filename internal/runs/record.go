package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

const (
	recordFile     = "record.json"
	envelopeFile   = "record.dsse.json"
	maxRecordBytes = 64 << 20
)

// Finish completes rec (finish time, status, the digest of every file in
// the run folder), writes record.json and its signed DSSE envelope
// atomically. exitCode is the code the command exits with.
func (r *Run) Finish(rec *Record, exitCode int) error {
	rec.FinishedAt = time.Now().UTC()
	rec.ExitCode = exitCode
	rec.Status = statusOf(exitCode)
	files, err := folderFiles(r.Dir)
	if err != nil {
		return fmt.Errorf("run %s: %w", r.ID, err)
	}
	rec.Files = files
	payload, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	payload = append(payload, '\n')
	k, err := signingKey(r.home)
	if err != nil {
		return fmt.Errorf("run %s: cannot load the run key: %w", r.ID, err)
	}
	signer, err := dsse.NewEnvelopeSigner(k)
	if err != nil {
		return err
	}
	env, err := signer.SignPayload(context.Background(), PayloadType, payload)
	if err != nil {
		return fmt.Errorf("run %s: failed to sign the record: %w", r.ID, err)
	}
	envBytes, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(r.Dir, recordFile), payload, 0o644); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(r.Dir, envelopeFile), append(envBytes, '\n'), 0o644)
}

// folderFiles hashes every regular file under dir except the record files.
// Anything that is not a regular file or folder is an error.
func folderFiles(dir string) ([]File, error) {
	m, err := digest.Tree(dir)
	if err != nil {
		return nil, err
	}
	var out []File
	for _, f := range m {
		if f.Path == recordFile || f.Path == envelopeFile {
			continue
		}
		if f.Mode == digest.ModeSymlink {
			return nil, fmt.Errorf("run folder holds a symbolic link %s", f.Path)
		}
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			return nil, err
		}
		out = append(out, File{Path: f.Path, SHA256: f.SHA256.Hex(), Size: fi.Size()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// Problem is one way a run folder differs from its record.
type Problem struct {
	Path string `json:"path,omitempty"`
	What string `json:"what"`
}

// Verify checks the envelope signature with the store's public run key,
// that record.json is exactly the signed payload, and that the files of
// the run folder are exactly the recorded ones with the recorded digests.
// It returns the record and the problems found; the error is an
// exitcode.Integrity error when there is any.
func (r *Run) Verify() (*Record, []Problem, error) {
	rec, payload, err := r.ReadRecord()
	if err != nil {
		return nil, nil, err
	}
	var problems []Problem
	envBytes, err := safefile.ReadFile(filepath.Join(r.Dir, envelopeFile), 2*maxRecordBytes)
	if err != nil {
		problems = append(problems, Problem{Path: envelopeFile, What: "missing or unreadable signature envelope: " + err.Error()})
	} else if err := verifyEnvelope(r.home, envBytes, payload); err != nil {
		problems = append(problems, Problem{Path: envelopeFile, What: err.Error()})
	}
	files, err := folderFiles(r.Dir)
	if err != nil {
		problems = append(problems, Problem{What: err.Error()})
	}
	want := map[string]File{}
	for _, f := range rec.Files {
		want[f.Path] = f
	}
	for _, f := range files {
		w, ok := want[f.Path]
		switch {
		case !ok:
			problems = append(problems, Problem{Path: f.Path, What: "file not in the record"})
		case w.SHA256 != f.SHA256 || w.Size != f.Size:
			problems = append(problems, Problem{Path: f.Path, What: fmt.Sprintf("content changed: recorded sha256 %s (%d bytes), now %s (%d bytes)", w.SHA256, w.Size, f.SHA256, f.Size)})
		}
		delete(want, f.Path)
	}
	for p := range want {
		problems = append(problems, Problem{Path: p, What: "recorded file is missing"})
	}
	sort.Slice(problems, func(i, j int) bool { return problems[i].Path < problems[j].Path })
	if len(problems) > 0 {
		var parts []string
		for _, p := range problems {
			parts = append(parts, strings.TrimPrefix(p.Path+": "+p.What, ": "))
		}
		return rec, problems, exitcode.Errorf(exitcode.Integrity, "run %s does not match its record: %s", r.ID, strings.Join(parts, "; "))
	}
	return rec, nil, nil
}

func verifyEnvelope(home string, envBytes, payload []byte) error {
	var env dsse.Envelope
	if err := json.Unmarshal(envBytes, &env); err != nil {
		return fmt.Errorf("signature envelope is not valid JSON: %v", err)
	}
	if env.PayloadType != PayloadType {
		return fmt.Errorf("signature envelope has payload type %q", env.PayloadType)
	}
	signed, err := env.DecodeB64Payload()
	if err != nil {
		return fmt.Errorf("signature envelope payload: %v", err)
	}
	if !bytes.Equal(signed, payload) {
		return errors.New("record.json differs from the signed payload")
	}
	k, err := verifyingKey(home)
	if err != nil {
		return err
	}
	v, err := dsse.NewEnvelopeVerifier(k)
	if err != nil {
		return err
	}
	if _, err := v.Verify(context.Background(), &env); err != nil {
		return fmt.Errorf("signature does not verify with the run key: %v", err)
	}
	return nil
}
