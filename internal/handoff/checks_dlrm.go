package handoff

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// The checks made here for DLRM.

func (p *planner) checkDLRMCheckpoint(ctx context.Context) {
	e, ok := p.lookup(idDLRMCheckpoint)
	if !ok {
		return
	}
	wantMD5 := e.Facts["md5"]
	if !isHex(wantMD5, 32) {
		p.fail("the catalog entry %s has no published MD5: a reviewer must supply the upstream MD5 before the checkpoint can be verified", e.ID)
		return
	}
	name := p.cfg.CheckpointFile
	if name == "" {
		name = e.Filename
	}
	dir, ok := p.volumeDir(ClassCheckpoint, p.cfg.Volumes.Checkpoint, "the official checkpoint "+e.Filename)
	if !ok {
		return
	}
	full := filepath.Join(dir, filepath.FromSlash(name))
	sum, err := hashFileProgress(ctx, full, true, p.opts.Progress)
	if err != nil {
		p.fail("checkpoint %s: %s: download %s into the checkpoint volume", name, errText(err), firstURL(e))
		return
	}
	if sum.MD5 != wantMD5 {
		p.mismatch("checkpoint %s has MD5 %s, upstream publishes %s for %s", name, sum.MD5, wantMD5, e.ID)
		return
	}
	rec, same, err := firstUse(p.opts.StateDir, FirstUse{ID: e.ID, SHA256: sum.SHA256.Hex(), Size: sum.Size, MD5: sum.MD5,
		FirstVerified: p.m.CreatedAt, Path: full, Host: p.opts.Host})
	if err != nil {
		p.fail("checkpoint %s: cannot keep its first-use record: %v", name, err)
		return
	}
	if !same {
		p.mismatch("checkpoint %s has sha256 %s and %d bytes, but %s was first verified on %s as sha256 %s, %d bytes (%s): refusing a different file with the same MD5",
			name, sum.SHA256.Hex(), sum.Size, e.ID, rec.FirstVerified.Format(time.RFC3339), rec.SHA256, rec.Size, rec.Path)
		return
	}
	p.m.Decisions.CheckpointFirstUse = &rec
	p.pin(Pin{Name: e.ID, Class: ClassCheckpoint, Path: name, Kind: KindFile, Size: sum.Size, SHA256: sum.SHA256.Hex(), MD5: sum.MD5, Origin: "first-use"})
}

// duTolerance is how far a file's size may be from a published du figure:
// du counts allocated blocks, not bytes, so only a gross difference (a
// truncated or wrong file) is a finding; the MD5 decides.
const duTolerance = 0.01

func (p *planner) checkCriteo(ctx context.Context) {
	dir, dirOK := p.volumeDir(ClassDataset, p.cfg.Volumes.Dataset, "the Criteo Terabyte day files day_0 … day_23")
	var missing []string
	for i := 0; i < criteoDays; i++ {
		e, ok := p.lookup(idCriteoDayPrefix + strconv.Itoa(i))
		if !ok {
			continue
		}
		wantMD5 := e.Facts["md5"]
		duKiB, err := strconv.ParseInt(e.Facts["du_kib"], 10, 64)
		if !isHex(wantMD5, 32) || err != nil || duKiB <= 0 {
			p.fail("the catalog entry %s lacks its published MD5 or size: a reviewer must supply them", e.ID)
			continue
		}
		if !dirOK {
			continue
		}
		full, fi, ok := statDatasetFile(dir, e.Filename, &missing)
		if !ok {
			continue
		}
		kib := (fi.Size() + 1023) / 1024
		if math.Abs(float64(kib-duKiB)) > duTolerance*float64(duKiB) {
			p.mismatch("%s is %d KiB, upstream publishes %d KiB (du): a truncated or wrong file (copies with days missing or cut to ~1.6 GB circulated in 2026)", e.Filename, kib, duKiB)
			continue
		}
		sum, err := hashFileProgress(ctx, full, true, p.opts.Progress)
		if err != nil {
			p.fail("%s: %s", e.Filename, errText(err))
			continue
		}
		if sum.MD5 != wantMD5 {
			p.mismatch("%s has MD5 %s, upstream publishes %s", e.Filename, sum.MD5, wantMD5)
			continue
		}
		p.pin(Pin{Name: e.ID, Class: ClassDataset, Path: e.Filename, Kind: KindFile, Size: sum.Size, SHA256: sum.SHA256.Hex(), MD5: sum.MD5, Origin: "recorded-here"})
	}
	if len(missing) > 0 {
		p.fail("%d of %d day files are missing from %s (%s): all of day_0 … day_23, unzipped, are needed", len(missing), criteoDays, dir, shortList(missing))
	}
}

// statDatasetFile stats the file name in the dataset folder dir; when it
// cannot, it adds name to missing and returns false.
func statDatasetFile(dir, name string, missing *[]string) (string, os.FileInfo, bool) {
	full := filepath.Join(dir, name)
	fi, err := os.Stat(full)
	if err != nil {
		*missing = append(*missing, name)
		return "", nil, false
	}
	return full, fi, true
}

func (p *planner) checkCriteoLicense(ctx context.Context) {
	e, ok := p.lookup(idCriteoDayPrefix + "0")
	if !ok {
		return
	}
	l := p.cfg.CriteoLicense
	if l == nil {
		p.fail(`no license acceptance is recorded: the Criteo 1TB Click Logs are %s; record criteo_license with license, accepted_by and date`, e.License)
		return
	}
	if l.License != e.License {
		p.fail("criteo_license.license is %q, but the dataset's license is %q: the acceptance must name it", clip(l.License), e.License)
	}
	if l.AcceptedBy == "" || l.Date == "" {
		p.fail("criteo_license needs accepted_by and date")
	}
	if len(p.res.Problems) == 0 {
		rec := *l
		p.m.Decisions.DatasetLicense = &rec
	}
}

func (p *planner) checkPreprocessed(ctx context.Context) {
	dir, dirOK := p.volumeDir(ClassDataset, p.cfg.Volumes.Dataset, "the preprocessed binaries")
	var missing []string
	for _, id := range []string{idDLRMTrainBin, idDLRMTestBin, idDLRMFeatureCount} {
		e, ok := p.lookup(id)
		if !ok || !dirOK {
			continue
		}
		full, fi, ok := statDatasetFile(dir, e.Filename, &missing)
		if !ok {
			continue
		}
		if s, ok := e.Facts["size"]; ok {
			want, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				p.fail("the catalog entry %s has a malformed size", e.ID)
				continue
			}
			if fi.Size() != want {
				p.fail("%s is %d bytes, but %s rows of %s bytes make %d: preprocessed with other flags, or cut short; preprocess again", e.Filename, fi.Size(), e.Facts["rows"], e.Facts["record_bytes"], want)
				continue
			}
		}
		sum, err := hashFileProgress(ctx, full, false, p.opts.Progress)
		if err != nil {
			p.fail("%s: %s", e.Filename, errText(err))
			continue
		}
		p.pin(Pin{Name: e.ID, Class: ClassDataset, Path: e.Filename, Kind: KindFile, Size: sum.Size, SHA256: sum.SHA256.Hex(), Origin: "recorded-here"})
	}
	if len(missing) > 0 {
		p.fail("%s missing from %s: the DLRM job would start the multi-day preprocessing silently inside the timed run; preprocess once, outside it", shortList(missing), dir)
	}
}

var unpinnedRef = regexp.MustCompile(`(?i)^(master|main|head|latest|dev|develop|trunk|nightly)$`)

func (p *planner) checkRuntime(ctx context.Context) {
	r := p.cfg.Runtime
	if r == nil {
		r = &Runtime{}
	}
	if r.Python == "" {
		p.fail("runtime.python is not set: give the interpreter version installed in the image")
	}
	if r.Torch == "" {
		p.fail("runtime.torch is not set: give the torch version installed in the image")
	}
	switch {
	case r.MLPerfLogging == "":
		p.fail("runtime.mlperf_logging is not set: give the mlperf_logging release or commit installed in the image (dlrm's requirements.txt points at a git:// URL GitHub no longer serves)")
	case unpinnedRef.MatchString(r.MLPerfLogging):
		p.fail("runtime.mlperf_logging is the branch %q: install and name a release or a commit", r.MLPerfLogging)
	}
}

func (p *planner) checkDLRMEnvironment(ctx context.Context) { p.checkNodeFloors() }
