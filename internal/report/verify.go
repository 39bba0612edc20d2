package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runimport"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/trust"
)

// VerifyRequest is what `repro runs verify` checks: a run of the home
// (IDs) or an evidence bundle (Bundle), exactly one of them.
type VerifyRequest struct {
	// IDs are the run ids (or unique id prefixes) named: one, or none
	// with Bundle.
	IDs []string
	// Bundle is the path of an evidence bundle made by runs.Export.
	Bundle string
	// Extract, with Bundle, is a new or empty folder the verified files
	// are written into.
	Extract string
	// VSA, if not "", is where a Verification Summary Attestation of the
	// check is written, signed with the home's run key.
	VSA string
	// Trust is the trust file; "" means the home's (and, for an imported
	// run, the key it was imported with).
	Trust string
	// Version is the repro version the VSA names as its verifier.
	Version string
}

// Verified is what VerifyRun found.
type Verified struct {
	*runs.Verification
	// Name is what was checked: the bundle path, or the run's id.
	Name string
	// Checks are the checks beyond the signature a VSA states: the
	// summary's scores against the verdicts, the board's reference profile.
	Checks []runs.VSACheck
	// Claims is what the check of the scores established; "" when the
	// run's kind has no scores to check or it did not verify.
	Claims string
	// NotRanked are the reasons a HumanEval run of the home does not rank
	// on its dataset's board; nil when the board was not checked.
	NotRanked []string
}

// VerifyRun checks a run of home, or an evidence bundle, against its
// signed record, as `repro runs verify` does: the record's DSSE envelope
// against the trust file (for a run of home without req.Trust, the key
// the run was imported with where it was imported), the statement's files,
// and a run folder holding the run its record names. A run or bundle that
// verifies has its summary's scores checked against its results' verdicts
// (report.CheckClaims), and a HumanEval run of home its match with its
// dataset's board reference profile (NotRankedReasons). With req.VSA the
// summary attestation is written whatever the verdict.
//
// Before anything is checked, a run and a bundle both or neither given,
// Extract without Bundle, a bundle that is not a readable regular file and
// a VSA path whose folder does not exist are usage errors (exit 2); an
// unknown run is a usage error and a missing trust file a precondition
// error (exit 3). These, an interrupt (runs.Interrupted) and a VSA that
// cannot be signed or written return no Verified. Otherwise VerifyRun
// returns what it found and the verification's error: nil when everything
// matches, else an integrity error (exit 4) or the bundle reader's.
func VerifyRun(ctx context.Context, home string, req VerifyRequest) (*Verified, error) {
	bundle, extract, vsaOut := req.Bundle, req.Extract, req.VSA
	if (bundle == "") == (len(req.IDs) == 0) {
		return nil, exitcode.Errorf(exitcode.Usage, "name a run ID or --bundle FILE.tar, not both")
	}
	if extract != "" && bundle == "" {
		return nil, exitcode.Errorf(exitcode.Usage, "--extract DIR needs --bundle FILE.tar")
	}
	var err error
	var r *runs.Run
	if bundle == "" {
		if r, err = runs.Open(home, req.IDs[0]); err != nil {
			return nil, err
		}
	} else if fi, err := os.Stat(bundle); err != nil || !fi.Mode().IsRegular() {
		return nil, exitcode.Errorf(exitcode.Usage, "cannot read bundle %q: not a readable regular file", bundle)
	}
	if vsaOut != "" {
		if fi, err := os.Stat(filepath.Dir(vsaOut)); err != nil || !fi.IsDir() {
			return nil, exitcode.Errorf(exitcode.Usage, "--vsa %q: its folder does not exist", vsaOut)
		}
	}
	var tf *trust.File
	var trustBytes []byte
	if r != nil && req.Trust == "" {
		tf, trustBytes, err = runimport.LoadTrustBytes(home, r.ID) // an imported run: the key it was accepted with
	} else {
		tf, trustBytes, err = runs.LoadTrustBytes(home, req.Trust)
	}
	if err != nil {
		return nil, err
	}
	var v *runs.Verification
	var verr error
	name, dir := bundle, ""
	switch {
	case extract != "":
		v, verr = runs.ExtractBundleContext(ctx, bundle, tf, extract)
		dir = filepath.Join(extract, "run")
	case bundle != "" && vsaOut != "":
		// The claims a VSA states are checked on the verified
		// files, extracted for the check only.
		tmp, err := os.MkdirTemp("", "repro-verify-")
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Precondition, "cannot make a folder to check the bundle's claims in: %v", err)
		}
		defer os.RemoveAll(tmp)
		v, verr = runs.ExtractBundleContext(ctx, bundle, tf, filepath.Join(tmp, "x"))
		dir = filepath.Join(tmp, "x", "run")
	case bundle != "":
		v, verr = runs.VerifyBundleContext(ctx, bundle, tf)
	default:
		name, dir = r.ID, r.Dir
		v, verr = r.VerifyWithContext(ctx, tf)
		if want := runimport.RecordID(home, r.ID); v != nil && v.Record.ID != want {
			v.Problems = append(v.Problems, runs.Problem{What: fmt.Sprintf("the record names run %q, the folder %q holds run %q", v.Record.ID, r.ID, want)})
			if verr == nil {
				verr = exitcode.Errorf(exitcode.Integrity, "run folder %q holds the record of run %q", r.ID, v.Record.ID)
			}
		}
	}
	if v == nil {
		return nil, verr
	}
	out := &Verified{Verification: v, Name: name}
	if verr == nil && dir != "" {
		if dis, checked := CheckClaims(dir, v.Record); checked {
			out.Checks = append(out.Checks, runs.VSACheck{Property: runs.VSAScoresFromVerdicts, Passed: len(dis) == 0, Required: true})
			out.Claims = "its summary's scores are what its results' verdicts give"
			for _, d := range dis {
				v.Problems = append(v.Problems, runs.Problem{Path: "eval_results.json", What: "the record's summary is not what the verdicts give: " + d})
				verr = exitcode.Errorf(exitcode.Integrity, "run %s: its record claims scores its results do not give: %s", v.Record.ID, d)
			}
		}
		if r != nil && v.Record.Kind == "humaneval" && verr == nil {
			rep, err := BuildContext(ctx, home, r.ID)
			if ctx.Err() != nil {
				return nil, runs.Interrupted(ctx, "run "+r.ID)
			}
			if err == nil && rep.HumanEval != nil {
				out.NotRanked = NotRankedReasons(LoadReference(home, rep.HumanEval.Dataset), rep)
				out.Checks = append(out.Checks, runs.VSACheck{Property: runs.VSAReferenceProfile, Passed: len(out.NotRanked) == 0})
			}
		}
	}
	if vsaOut != "" {
		if err := writeVSA(home, vsaOut, v, trustBytes, out.Checks, req.Version); err != nil {
			return nil, err
		}
	}
	return out, verr
}

// writeVSA writes the Verification Summary Attestation of v to out, signed
// with home's run key (the verifier's key), whatever the verdict.
func writeVSA(home, out string, v *runs.Verification, trustBytes []byte, checks []runs.VSACheck, version string) error {
	k, err := runs.LocalKey(home)
	if err != nil {
		return exitcode.Errorf(exitcode.Precondition, "cannot load the run key to sign the verification summary: %v", err)
	}
	if err := runs.WriteVSA(k, out, v, runs.VSAInput{Version: version, TrustFile: trustBytes, Now: time.Now(), Checks: checks}); err != nil {
		return exitcode.Errorf(exitcode.Usage, "--vsa: %v", err)
	}
	return nil
}
