package handoff

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/digest"
)

// The checks made here that both workloads share: image, source tree, GPU
// runtime floors, node floors and the data classes.

func (p *planner) checkImage(ctx context.Context) {
	if p.cfg.Image == "" {
		p.fail(`no image: set "image" to name@sha256:<digest> (a tag alone is refused)`)
		return
	}
	ref, err := ParseImageRef(p.cfg.Image)
	if err != nil {
		p.fail("image: %v", err)
		return
	}
	p.m.Image = ref.String()
	p.checkImageTrust(ctx, ref)
}

func (p *planner) checkSource(ctx context.Context) {
	e, ok := p.lookup(p.w.SourceID)
	if !ok {
		return
	}
	if err := e.RequirePinned(); err != nil {
		p.fail("%v", err)
		return
	}
	commit := e.Facts["upstream_commit"]
	dir, ok := p.volumeDir(ClassSource, p.cfg.Volumes.Source, "the source checkout at "+commit)
	if !ok {
		return
	}
	tree, err := digest.Tree(dir)
	if err != nil {
		p.fail("%v", err)
		return
	}
	got := tree.Digest()
	if got != *e.TreeDigest {
		p.mismatch("the checkout at %s has tree digest %s, the catalog pins %s for %s (%s): a different commit, local edits, or converted line endings", dir, got.Hex(), e.TreeDigest.Hex(), e.ID, commit)
		return
	}
	p.pin(Pin{Name: e.ID, Class: ClassSource, Path: ".", Kind: KindTree, SHA256: got.Hex(), Origin: "catalog"})
	files := map[string]digest.TreeFile{}
	for _, f := range tree {
		files[f.Path] = f
	}
	var keys []string
	for k := range e.Facts {
		if strings.HasPrefix(k, "sha256:") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		rel := strings.TrimPrefix(k, "sha256:")
		want := e.Facts[k]
		f, ok := files[rel]
		if !ok {
			p.mismatch("pinned file %s is missing from the checkout at %s", rel, dir)
			continue
		}
		if f.SHA256.Hex() != want {
			p.mismatch("pinned file %s has sha256 %s, the catalog pins %s", rel, f.SHA256.Hex(), want)
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			p.fail("%s: %s", rel, errText(err))
			continue
		}
		p.pin(Pin{Name: e.ID + ":" + rel, Class: ClassSource, Path: rel, Kind: KindFile, Size: fi.Size(), SHA256: want, Origin: "catalog"})
	}
}

func (p *planner) checkGPURuntime(ctx context.Context) {
	if p.cfg.GPUs < 1 {
		p.fail(`"gpus" is not set: give the number of GPUs the job needs on its node`)
	}
	if p.cfg.ImageCUDA == "" {
		p.fail(`"image_cuda" is not set: give the CUDA version the image was built with, which decides the driver floor (on record: %s)`, strings.Join(KnownCUDA(), ", "))
		return
	}
	f, ok := FloorFor(p.cfg.ImageCUDA)
	if !ok {
		p.fail("no driver floor is on record for CUDA %s (on record: %s): a reviewer must add the published floor for that version to repro, or use an image built for one of those", clip(p.cfg.ImageCUDA), strings.Join(KnownCUDA(), ", "))
		return
	}
	p.m.DriverFloor = &f
}

func (p *planner) checkNodeFloors() {
	n := p.cfg.Node
	if n == nil || n.MinDiskGiB <= 0 {
		p.fail("node.min_disk_gib is not set: no published figure exists for %s, so a reviewer must state the free disk the node needs", p.w.Name)
	}
	if n == nil || n.MinMemoryGiB <= 0 {
		p.fail("node.min_memory_gib is not set: no published figure exists for %s, so a reviewer must state the memory the node needs", p.w.Name)
	}
}

var (
	secretName  = regexp.MustCompile(`(?i)(pass(wd|word)?|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential|auth)`)
	secretArg   = regexp.MustCompile(`(?i)(pass(wd|word)?|secret|token|api[_-]?key|access[_-]?key)\s*[=:]`)
	secretValue = regexp.MustCompile(`(-----BEGIN [A-Z ]*PRIVATE KEY-----|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{20,}|\bxox[abprs]-[A-Za-z0-9-]{10,}|\bhf_[A-Za-z0-9]{20,})`)
)

func (p *planner) checkDataClasses(ctx context.Context) {
	c := p.cfg
	out := c.Volumes.Output
	if out == nil || (out.Path == "" && out.NodePath == "") {
		p.fail("volumes.output is not set: give the folder results are written to (path, and node_path if the nodes see it elsewhere), outside every input volume")
	}
	type vol struct {
		class string
		v     *Volume
	}
	vols := []vol{{ClassDataset, c.Volumes.Dataset}, {ClassCheckpoint, c.Volumes.Checkpoint}, {ClassSource, c.Volumes.Source}, {ClassOutput, c.Volumes.Output}, {ClassCredentials, c.Volumes.Credentials}}
	for i := 0; i < len(vols); i++ {
		for j := i + 1; j < len(vols); j++ {
			a, b := vols[i], vols[j]
			if a.v == nil || b.v == nil {
				continue
			}
			// Inputs may share a parent; what must never happen is that
			// outputs or credentials overlap anything else.
			if !(a.class == ClassOutput || b.class == ClassOutput || a.class == ClassCredentials || b.class == ClassCredentials) {
				continue
			}
			for _, pair := range [][2]string{{localPath(a.v.Path), localPath(b.v.Path)}, {nodePath(a.v), nodePath(b.v)}} {
				if overlaps(pair[0], pair[1]) {
					p.fail("volumes.%s (%s) and volumes.%s (%s) overlap: outputs and credentials each need a volume of their own, outside every other", a.class, pair[0], b.class, pair[1])
					break
				}
			}
			if a.v.Claim != "" && a.v.Claim == b.v.Claim {
				p.fail("volumes.%s and volumes.%s name the same claim %q: each data class needs its own volume", a.class, b.class, a.v.Claim)
			}
		}
	}
	if p.opts.OutDir != "" {
		bundle := localPath(p.opts.OutDir)
		for _, v := range vols {
			if v.v == nil || v.class == ClassOutput || v.v.Path == "" {
				continue
			}
			if overlaps(bundle, localPath(v.v.Path)) {
				p.fail("the bundle folder %s overlaps volumes.%s (%s): write the bundle outside every input volume", p.opts.OutDir, v.class, v.v.Path)
			}
		}
	}
	var envKeys []string
	for k := range c.Env {
		envKeys = append(envKeys, k)
	}
	sort.Strings(envKeys)
	for _, k := range envKeys {
		v := c.Env[k]
		if secretName.MatchString(k) && !strings.HasPrefix(v, mounts[ClassCredentials]+"/") {
			p.fail("env.%s looks like a credential baked into the manifest: put the secret in volumes.credentials and pass its path (under %s/) instead", k, mounts[ClassCredentials])
		} else if secretValue.MatchString(v) {
			p.fail("env.%s holds what looks like a key or token: credentials never go into the manifest; use volumes.credentials", k)
		}
	}
	for i, a := range c.Command {
		if secretArg.MatchString(a) || secretValue.MatchString(a) {
			p.fail("command[%d] carries what looks like a credential: pass a file under %s/ instead", i, mounts[ClassCredentials])
		}
	}
}

func localPath(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

func nodePath(v *Volume) string {
	if v.NodePath != "" {
		return v.NodePath
	}
	return v.Path
}

// overlaps reports whether a and b are the same folder or one holds the
// other.
func overlaps(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	a, b = path.Clean(filepath.ToSlash(a)), path.Clean(filepath.ToSlash(b))
	return a == b || strings.HasPrefix(a, strings.TrimSuffix(b, "/")+"/") || strings.HasPrefix(b, strings.TrimSuffix(a, "/")+"/")
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func firstURL(e catalog.Entry) string {
	if len(e.URLs) > 0 {
		return e.URLs[0]
	}
	return e.Filename
}

func shortList(s []string) string {
	if len(s) > 6 {
		return strings.Join(s[:6], ", ") + fmt.Sprintf(" and %d more", len(s)-6)
	}
	return strings.Join(s, ", ")
}
