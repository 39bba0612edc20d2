package handoff

import (
	"context"
	"net/url"
	"path/filepath"

	"github.com/reprolab/repro/internal/digest"
)

// The checks made here for MiniGo.

func (p *planner) checkProGames(ctx context.Context) {
	d := p.cfg.ProGames
	if d == nil {
		p.m.Decisions.ProGames = &ProGamesDecision{
			Decision:  "none",
			Rationale: "default: the MLPerf v0.7+ MiniGo protocol trains on self-play only and uses no human games",
		}
		return
	}
	rec := *d
	rec.Files = append([]PinnedFile(nil), d.Files...)
	p.m.Decisions.ProGames = &rec
	switch d.Decision {
	case "none":
		if d.SourceURL != "" || len(d.Files) > 0 || d.LicenseRuling != nil {
			p.fail(`pro_games.decision is "none" but names a source, files or a license ruling: either drop them or set decision to "include"`)
		}
		return
	case "include":
	default:
		p.fail(`pro_games.decision is %q: it must be "none" (v0.7+ protocol) or "include"`, clip(d.Decision))
		return
	}
	if d.Reviewer == "" || d.Date == "" {
		p.fail("pro_games: an included game set needs the reviewer and the date of the review")
	}
	if u, err := url.Parse(d.SourceURL); d.SourceURL == "" || err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		p.fail("pro_games.source_url must name where the games come from as an https URL without credentials")
	}
	r := d.LicenseRuling
	if r == nil || r.License == "" || r.Ruling == "" || r.Reviewer == "" || r.Date == "" {
		p.fail("pro_games.license_ruling needs license, ruling, reviewer and date: no license or provenance statement exists upstream, so someone must rule on it")
	}
	if len(d.Files) == 0 {
		p.fail("pro_games.files is empty: list every game file with its sha256")
		return
	}
	dir, ok := p.volumeDir(ClassDataset, p.cfg.Volumes.Dataset, "the professional game files")
	for i, f := range d.Files {
		want, err := digest.Parse(f.SHA256)
		if err != nil {
			p.fail("pro_games.files[%d] (%s): sha256: %v", i, f.Path, err)
			continue
		}
		if !ok {
			continue
		}
		sum, err := hashFile(ctx, filepath.Join(dir, filepath.FromSlash(f.Path)), false)
		if err != nil {
			p.fail("pro_games.files[%d]: %s: %s", i, f.Path, errText(err))
			continue
		}
		if sum.SHA256 != want {
			p.mismatch("pro_games.files[%d]: %s has sha256 %s, the review recorded %s", i, f.Path, sum.SHA256.Hex(), want.Hex())
			continue
		}
		p.pin(Pin{Name: "pro-game:" + f.Path, Class: ClassDataset, Path: f.Path, Kind: KindFile, Size: sum.Size, SHA256: sum.SHA256.Hex(), Origin: "review"})
	}
}

func (p *planner) checkMiniGoEnvironment(ctx context.Context) {
	p.checkNodeFloors()
	var bootstrap, target *ModelPin
	if p.cfg.Models != nil {
		bootstrap, target = p.cfg.Models.Bootstrap, p.cfg.Models.Target
	}
	dir, dirOK := "", false
	if bootstrap != nil || target != nil {
		dir, dirOK = p.volumeDir(ClassCheckpoint, p.cfg.Volumes.Checkpoint, "the MiniGo bootstrap checkpoint and target model")
	}
	for _, x := range []struct {
		id, field, what string
		pin             *ModelPin
	}{
		{idMiniGoBootstrap, "models.bootstrap", "the bootstrap checkpoint (mlperf07/, from gs://minigo-pub/ml_perf/0.7/checkpoint.tar.gz)", bootstrap},
		{idMiniGoTarget, "models.target", "the frozen target model (target.minigo.tf, from gs://minigo-pub/ml_perf/0.7/target.*)", target},
	} {
		if _, ok := p.lookup(x.id); !ok {
			continue
		}
		mp := x.pin
		if mp == nil || mp.Path == "" {
			p.fail("%s is not set: give the path of %s inside the checkpoint volume and the digest a reviewer recorded (upstream publishes none)", x.field, x.what)
			continue
		}
		if (mp.SHA256 == "") == (mp.TreeDigest == "") {
			p.fail("%s needs exactly one of sha256 (a file) or tree_digest (a folder), recorded by a reviewer after downloading it: upstream publishes no digest", x.field)
			continue
		}
		if !dirOK {
			continue
		}
		full := filepath.Join(dir, filepath.FromSlash(mp.Path))
		if mp.TreeDigest != "" {
			want, err := digest.Parse(mp.TreeDigest)
			if err != nil {
				p.fail("%s.tree_digest: %v", x.field, err)
				continue
			}
			tree, err := digest.Tree(full)
			if err != nil {
				p.fail("%s: %v", x.field, err)
				continue
			}
			if got := tree.Digest(); got != want {
				p.mismatch("%s: %s has tree digest %s, the review recorded %s", x.field, mp.Path, got.Hex(), want.Hex())
				continue
			}
			p.pin(Pin{Name: x.id, Class: ClassCheckpoint, Path: mp.Path, Kind: KindTree, SHA256: want.Hex(), Origin: "review"})
			continue
		}
		want, err := digest.Parse(mp.SHA256)
		if err != nil {
			p.fail("%s.sha256: %v", x.field, err)
			continue
		}
		sum, err := hashFileProgress(ctx, full, false, p.opts.Progress)
		if err != nil {
			p.fail("%s: %s: %s", x.field, mp.Path, errText(err))
			continue
		}
		if sum.SHA256 != want {
			p.mismatch("%s: %s has sha256 %s, the review recorded %s", x.field, mp.Path, sum.SHA256.Hex(), want.Hex())
			continue
		}
		p.pin(Pin{Name: x.id, Class: ClassCheckpoint, Path: mp.Path, Kind: KindFile, Size: sum.Size, SHA256: sum.SHA256.Hex(), Origin: "review"})
	}
}

func (p *planner) checkEntrypoint(ctx context.Context) {
	if len(p.m.Command) == 0 {
		p.fail(`"command" is not set: the reference ml_perf scripts log no MLLOG lines, so name the entry point inside the image that does (and "log_file" unless it logs to standard output)`)
	}
}
