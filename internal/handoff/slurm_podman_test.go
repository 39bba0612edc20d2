package handoff

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
	"github.com/reprolab/repro/internal/testenv"
)

// controlsProbe runs as the workload's entry point inside the container
// and prints what it observes of each control; run.sh writes it into
// result_0.txt.
const controlsProbe = `{ echo "probe uid $(id -u)"; ` +
	`echo "probe net $(ls /sys/class/net | tr '\n' ' ')"; ` +
	`grep -E '^(NoNewPrivs|CapBnd):' /proc/self/status | while read -r k v; do echo "probe ${k%:} $v"; done; ` +
	`for p in /usr /var/tmp /source /data /checkpoint /bundle /results /work /tmp; do if touch "$p/.repro-w" 2>/dev/null; then echo "probe write $p ok"; rm -f "$p/.repro-w"; else echo "probe write $p refused"; fi; done; ` +
	`printf '#!/bin/sh\nexit 0\n' >/tmp/x.sh && chmod +x /tmp/x.sh; ` +
	`if /tmp/x.sh 2>/dev/null; then echo "probe exec-tmp ok"; else echo "probe exec-tmp refused"; fi; ` +
	`echo "probe gpu-device ${REPRO_CDI_TEST:-none}"; }`

// podmanImage returns the evaluator test image (Debian bookworm with
// bash, coreutils and python3) with a layer adding the DLRM framework
// probe's stand-in as python, pushed to a registry on loopback and pulled
// into podman's storage; it returns its name@sha256 reference.
func podmanImage(t *testing.T) string {
	t.Helper()
	e := sandboxtest.Engine(t)
	img := sandboxtest.Image(t, e)
	saved := filepath.Join(t.TempDir(), "evaluator.tar")
	f, err := os.Create(saved)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SaveImage(context.Background(), img.ID, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	base, err := tarball.ImageFromPath(saved, nil)
	if err != nil {
		t.Fatal(err)
	}
	stand := "#!/bin/sh\ncat >/dev/null\ncat <<'EOF'\npython 3.11.2\ntorch 1.13.1\ngpu yes\narch sm_90 yes\nmlperf_logging 2.1.0\nEOF\n"
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "usr/local/bin/python", Mode: 0o755, Size: int64(len(stand)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)})
	tw.Write([]byte(stand))
	tw.Close()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	full, err := mutate.AppendLayers(base, l)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	tag, _ := name.NewTag(host + "/repro-test/dlrm:podman")
	if err := remote.Write(tag, full); err != nil {
		t.Fatal(err)
	}
	var dg v1.Hash
	if dg, err = full.Digest(); err != nil {
		t.Fatal(err)
	}
	ref := host + "/repro-test/dlrm@" + dg.String()
	if out, err := exec.Command("podman", "pull", "--quiet", "--tls-verify=false", ref).CombinedOutput(); err != nil {
		t.Fatalf("podman pull %s: %v\n%s", ref, err, out)
	}
	t.Cleanup(func() { exec.Command("podman", "rmi", "--force", ref).Run() })
	return ref
}

// TestSlurmPodmanControls runs a DLRM bundle made for Podman on the real
// Slurm cluster of the handoff tests: the node's preflight (with stand-ins
// for the NVIDIA driver, and a CDI specification for nvidia.com/gpu
// whose only edit is an environment variable), the preflight inside the
// image, and one run whose entry point probes the controls from inside
// the container. Every control must hold: a non-root user, no network
// but loopback, no-new-privileges, an empty capability bounding set, a
// read-only root and read-only inputs, writable /results, /work and a
// noexec /tmp. Removal rows take one control out of the generated batch
// script and require the probe to see it gone.
func TestSlurmPodmanControls(t *testing.T) {
	if _, err := exec.LookPath("podman"); err != nil {
		testenv.Missing(t, "podman", "apt-get install --no-install-recommends podman (scripts/deps.sh)")
	}
	c := testenv.StartSlurm(t, 2)
	ref := podmanImage(t)
	cdi := fmt.Sprintf("/var/run/cdi/repro-test-%d.json", os.Getpid())
	os.MkdirAll(filepath.Dir(cdi), 0o755)
	if err := os.WriteFile(cdi, []byte(`{"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": [{"name": "all", "containerEdits": {"env": ["REPRO_CDI_TEST=1"]}}], "containerEdits": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(cdi) })

	w := newDLRMWorld(t)
	w.cfg.Image, w.cfg.Container = ref, ContainerPodman
	w.cfg.Command = []string{"bash", "-c", controlsProbe}
	w.cfg.Runs, w.cfg.Seeds = 1, []int64{7}
	// The container's user (65532, since the job runs as root here) reads
	// the input volumes like any account the operator names.
	for d := w.root; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	filepath.Walk(w.root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode()&os.ModeSymlink == 0 {
			mode := os.FileMode(0o644)
			if fi.IsDir() {
				mode = 0o755
			}
			os.Chmod(p, mode|fi.Mode()&0o111)
		}
		return nil
	})
	m := w.bundle(t, TargetSlurm)
	for _, r := range m.Relaxations {
		if r.Control == "no network" {
			t.Errorf("a podman bundle lists no network as relaxed: %+v", r)
		}
	}
	stand := gpuStack(t, 1, "dlrm")
	os.Remove(filepath.Join(stand, "srun")) // the real srun launches podman
	env := "--export=PATH=" + stand + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin,HOME=/root"
	script := filepath.Join(w.out, SbatchFile)

	run := func(t *testing.T, script string) map[string]string {
		t.Helper()
		id, code, out := c.Submit(t, w.out, script, 5*time.Minute, env)
		if code != "0" {
			t.Fatalf("job %s exit %q:\n%s", id, code, out)
		}
		res, err := os.ReadFile(filepath.Join(w.path("volumes", "output"), "repro-dlrm-"+id, "result_0.txt"))
		if err != nil {
			t.Fatalf("job %s: %v\n%s", id, err, out)
		}
		seen := map[string]string{}
		for _, line := range strings.Split(string(res), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) < 2 || f[0] != "probe":
			case f[1] == "write" && len(f) == 4:
				seen["write "+f[2]] = f[3]
			default:
				seen[f[1]] = strings.Join(f[2:], " ")
			}
		}
		return seen
	}
	want := map[string]string{
		"uid": "65532", "net": "lo", "NoNewPrivs": "1", "CapBnd": "0000000000000000",
		"write /usr": "refused", "write /var/tmp": "refused", "write /source": "refused", "write /data": "refused", "write /checkpoint": "refused", "write /bundle": "refused",
		"write /results": "ok", "write /work": "ok", "write /tmp": "ok", "exec-tmp": "refused", "gpu-device": "1",
	}
	seen := run(t, script)
	for k, v := range want {
		if seen[k] != v {
			t.Errorf("inside the container %s is %q, want %q (all: %v)", k, seen[k], v, seen)
		}
	}
	if t.Failed() {
		d, _ := filepath.Glob(filepath.Join(w.path("volumes", "output"), "repro-dlrm-*", "*"))
		for _, f := range d {
			b, _ := os.ReadFile(f)
			t.Logf("%s:\n%s", f, b)
		}
	}
	if t.Failed() {
		return
	}
	sb := string(must(os.ReadFile(script)))
	for _, rm := range []struct{ flag, key, want string }{
		{"run_user=(--user 65532:65532)", "uid", "65532"},
		{"--network=none ", "net", "lo"},
		{"--read-only ", "write /var/tmp", "refused"},
		{"--security-opt=no-new-privileges ", "NoNewPrivs", "1"},
		{"--cap-drop=ALL ", "CapBnd", "0000000000000000"},
		{"noexec,", "exec-tmp", "refused"},
	} {
		if !strings.Contains(sb, rm.flag) {
			t.Fatalf("the batch script has no %q", rm.flag)
		}
		changed := strings.Replace(sb, rm.flag, "", 1)
		if strings.HasPrefix(rm.flag, "run_user=") {
			changed = strings.Replace(strings.Replace(sb, rm.flag, "run_user=(--user 0:0)", 1), "chown -R 65532:65532 --", "true", 1)
		}
		p := filepath.Join(t.TempDir(), "job.sbatch")
		writeFile(t, p, []byte(changed), 0o755)
		got := run(t, p)[rm.key]
		if got == rm.want {
			t.Errorf("with %s removed the probe still sees %s %q: the row proves nothing", rm.flag, rm.key, got)
		} else {
			t.Logf("with %s removed, %s is %q", strings.TrimSpace(rm.flag), rm.key, got)
		}
	}
}
