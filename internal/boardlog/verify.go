package boardlog

import (
	"context"
	"fmt"

	"github.com/reprolab/repro/internal/exitcode"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// VerifyOptions say what Verify checks besides the log itself.
type VerifyOptions struct {
	// RunID, when set, must have an entry in the log, proven included in
	// the checkpoint's tree.
	RunID string
	// Since, when set, is an older signed checkpoint of the same log that
	// the newer one must extend; SinceFrom says where it came from.
	Since     []byte
	SinceFrom string
}

// Report is what Verify checked.
type Report struct {
	Source string `json:"source"`
	Origin string `json:"origin"`
	// Key names the verifier key (name and key hash) the checkpoint is
	// signed with.
	Key      string    `json:"key"`
	Size     int64     `json:"size"`
	RootHash tlog.Hash `json:"root_hash"`
	// EntriesChecked counts the entries read and checked against their
	// leaf hashes: every entry of the log.
	EntriesChecked int64        `json:"entries_checked"`
	Run            []Inclusion  `json:"run,omitempty"`
	Since          *Consistency `json:"since,omitempty"`
}

// Inclusion is a checked proof that an entry is in the tree.
type Inclusion struct {
	Index int64            `json:"index"`
	Entry Entry            `json:"entry"`
	Proof tlog.RecordProof `json:"inclusion_proof"`
}

// Consistency is a checked proof that the tree extends an older one.
type Consistency struct {
	From     string         `json:"from"`
	Size     int64          `json:"size"`
	RootHash tlog.Hash      `json:"root_hash"`
	Proof    tlog.TreeProof `json:"consistency_proof"`
}

// Verify checks the log at src against the verifier key v: the
// checkpoint's signature, every entry against the signed tree, and what
// o asks (a run's inclusion, consistency with an older checkpoint). The
// proofs are made from the log's tiles and checked with
// golang.org/x/mod/sumdb/tlog. A log that fails a check is an integrity
// error (exit 4); one that cannot be read a precondition error (exit 3).
func Verify(ctx context.Context, src Source, v note.Verifier, o VerifyOptions) (*Report, error) {
	lv, err := openView(ctx, src, v)
	if err != nil {
		return nil, err
	}
	cp := lv.cp
	rep := &Report{Source: src.String(), Origin: cp.Origin, Key: fmt.Sprintf("%s+%08x", v.Name(), v.KeyHash()), Size: cp.Tree.N, RootHash: cp.Tree.Hash}
	texts, entries, err := lv.entries(ctx)
	if err != nil {
		return nil, classify(fmt.Errorf("log at %s: %w", src, err))
	}
	rep.EntriesChecked = int64(len(entries))
	if o.RunID != "" {
		for i, e := range entries {
			if e.RunID != o.RunID {
				continue
			}
			idx := int64(i)
			p, err := tlog.ProveRecord(cp.Tree.N, idx, lv.hr)
			if err != nil {
				return nil, classify(fmt.Errorf("inclusion proof of entry %d: %w", idx, err))
			}
			if err := tlog.CheckRecord(p, cp.Tree.N, cp.Tree.Hash, idx, tlog.RecordHash(texts[i])); err != nil {
				return nil, exitcode.Errorf(exitcode.Integrity, "entry %d (run %s) is not included in the checkpoint's tree: %v", idx, e.RunID, err)
			}
			rep.Run = append(rep.Run, Inclusion{Index: idx, Entry: e, Proof: p})
		}
		if len(rep.Run) == 0 {
			return nil, exitcode.Errorf(exitcode.Integrity, "run %s is not in the log at %s (%d entries): the board's history does not hold it", o.RunID, src, cp.Tree.N)
		}
	}
	if o.Since != nil {
		c, err := consistent(lv, v, o.Since)
		if err != nil {
			return nil, err
		}
		c.From = o.SinceFrom
		rep.Since = c
	}
	return rep, nil
}

// consistent checks that the view's tree extends the tree of the older
// signed checkpoint old.
func consistent(lv *view, v note.Verifier, old []byte) (*Consistency, error) {
	oc, err := OpenCheckpoint(old, v)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "older checkpoint: %v", err)
	}
	cp := lv.cp
	c := &Consistency{Size: oc.Tree.N, RootHash: oc.Tree.Hash, Proof: tlog.TreeProof{}}
	switch {
	case oc.Origin != cp.Origin:
		return nil, exitcode.Errorf(exitcode.Integrity, "the older checkpoint is of log %q, the newer of %q", oc.Origin, cp.Origin)
	case oc.Tree.N > cp.Tree.N:
		return nil, exitcode.Errorf(exitcode.Integrity, "the log shrank: the older checkpoint holds %d entries, the newer %d (entries were removed)", oc.Tree.N, cp.Tree.N)
	case oc.Tree.N == 0:
		return c, nil
	case oc.Tree.N == cp.Tree.N:
		if oc.Tree.Hash != cp.Tree.Hash {
			return nil, exitcode.Errorf(exitcode.Integrity, "the log forked: two checkpoints of %d entries with different root hashes (%s, %s)", cp.Tree.N, oc.Tree.Hash, cp.Tree.Hash)
		}
		return c, nil
	}
	p, err := tlog.ProveTree(cp.Tree.N, oc.Tree.N, lv.hr)
	if err != nil {
		return nil, classify(fmt.Errorf("consistency proof from %d to %d entries: %w", oc.Tree.N, cp.Tree.N, err))
	}
	if err := tlog.CheckTree(p, cp.Tree.N, cp.Tree.Hash, oc.Tree.N, oc.Tree.Hash); err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "the log of %d entries does not extend the older checkpoint of %d entries: its history was rewritten (%v)", cp.Tree.N, oc.Tree.N, err)
	}
	c.Proof = p
	return c, nil
}
