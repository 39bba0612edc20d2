// Package runstest holds test helpers for run folders.
package runstest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/testenv"
)

// Verified opens the run in folder dir (REPRO_HOME/runs/<id>), checks it
// against its signed record, and returns the record; any failure fails t.
// It also checks the run with IndependentVerify.
func Verified(t testing.TB, dir string) *runs.Record {
	t.Helper()
	home := filepath.Dir(filepath.Dir(dir))
	run, err := runs.Open(home, filepath.Base(dir))
	if err != nil {
		t.Fatal(err)
	}
	rec, problems, err := run.Verify()
	if err != nil {
		t.Fatalf("run %s does not match its signed record: %v %v", run.ID, err, problems)
	}
	if out, err := IndependentVerify(t, dir, runs.LocalPublicKeyPath(home)); err != nil {
		t.Fatalf("run %s: the independent verifier refuses it: %v\n%s", run.ID, err, out)
	}
	return rec
}

// independentVerifier checks a run folder's DSSE envelope and in-toto
// statement without repro's code: the DSSE v1 pre-authentication encoding
// written out from the specification, ed25519 from Python's cryptography
// package, the public key read as a PEM SubjectPublicKeyInfo, and the
// folder's files hashed with hashlib.
const independentVerifier = `
import base64, hashlib, json, os, sys
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key

def fail(msg):
    print("REFUSED: " + msg)
    sys.exit(1)

def pae(payload_type, body):
    t = payload_type.encode("utf-8")
    return b"DSSEv1 " + str(len(t)).encode() + b" " + t + b" " + str(len(body)).encode() + b" " + body

folder, key_path, predicate_type = sys.argv[1], sys.argv[2], sys.argv[3]
with open(key_path, "rb") as f:
    key = load_pem_public_key(f.read())
if not isinstance(key, Ed25519PublicKey):
    fail("public key is not ed25519")
with open(os.path.join(folder, "record.dsse.json"), "rb") as f:
    env = json.load(f)
if env.get("payloadType") != "application/vnd.in-toto+json":
    fail("payload type %r" % env.get("payloadType"))
body = base64.b64decode(env["payload"], validate=True)
good = 0
for s in env.get("signatures", []):
    try:
        key.verify(base64.b64decode(s["sig"], validate=True), pae(env["payloadType"], body))
        good += 1
    except InvalidSignature:
        pass
if good == 0:
    fail("no signature verifies with the public key")
st = json.loads(body)
if st.get("_type") != "https://in-toto.io/Statement/v1":
    fail("statement type %r" % st.get("_type"))
if st.get("predicateType") != predicate_type:
    fail("predicate type %r" % st.get("predicateType"))
subjects = {}
for s in st["subject"]:
    if s["name"] in subjects:
        fail("subject %s twice" % s["name"])
    subjects[s["name"]] = s["digest"]["sha256"]
on_disk = {}
for root, dirs, files in os.walk(folder):
    for name in files:
        p = os.path.join(root, name)
        rel = os.path.relpath(p, folder).replace(os.sep, "/")
        if rel == "record.dsse.json":
            continue
        with open(p, "rb") as f:
            on_disk[rel] = hashlib.sha256(f.read()).hexdigest()
for rel in sorted(set(subjects) | set(on_disk)):
    if rel not in on_disk:
        fail("subject %s is missing" % rel)
    if rel not in subjects:
        fail("file %s is not a subject" % rel)
    if subjects[rel] != on_disk[rel]:
        fail("file %s has sha256 %s, signed %s" % (rel, on_disk[rel], subjects[rel]))
with open(os.path.join(folder, "record.json"), "rb") as f:
    if json.load(f) != st["predicate"]:
        fail("record.json is not the predicate")
print("verified %d subjects, predicate %s" % (len(subjects), predicate_type))
`

// IndependentVerify runs the independent verifier (Python 3 with Debian's
// python3-cryptography) on the run folder dir with the public key at
// pubPath, and returns its output; the error is non-nil when it refuses.
// A missing Python or cryptography package stops t via testenv.Missing.
func IndependentVerify(t testing.TB, dir, pubPath string) (string, error) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.Missing(t, "python3", "scripts/deps.sh installs python3-cryptography")
	}
	if err := exec.Command(py, "-c", "import cryptography.hazmat.primitives.asymmetric.ed25519").Run(); err != nil {
		testenv.Missing(t, "python3-cryptography", "scripts/deps.sh installs it")
	}
	script := filepath.Join(t.TempDir(), "verify_dsse.py")
	if err := os.WriteFile(script, []byte(independentVerifier), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, script, dir, pubPath, runs.PredicateType).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// Sample is one scored sample of a HumanEvalRun: its task, whether it
// passed, and when not, the failing input (a JSON array of arguments) and
// the reason.
type Sample struct {
	Task, Solution string
	Pass           bool
	FailingInput   string
	Reason         string
}

// HumanEvalOptions vary the record of a HumanEvalRun.
type HumanEvalOptions struct {
	ImageID  string
	Hostname string
	Harness  string
	Dataset  string
	// Label and Model go into the record as repro score --label and
	// --model put them; empty leaves them out.
	Label, Model string
	// Engine is the scoring engine the record names; empty leaves it out.
	Engine string
}

// HumanEvalRun writes a signed humaneval run under home through the runs
// API: an EvalPlus-format eval_results.json of samples (base phase only)
// and a record with summary, image, limits, host and dataset, as
// `repro score score` leaves them. It returns the run's id.
func HumanEvalRun(t testing.TB, home string, samples []Sample, o HumanEvalOptions) string {
	t.Helper()
	r, err := runs.Create(home, "humaneval")
	if err != nil {
		t.Fatal(err)
	}
	eval := map[string][]map[string]any{}
	passed := 0
	tasks := map[string]bool{}
	for _, s := range samples {
		tasks[s.Task] = true
		e := map[string]any{"task_id": s.Task, "solution": s.Solution, "base_status": "pass", "plus_status": nil,
			"base_fail_tests": []any{}, "plus_fail_tests": []any{}, "base_elapsed": 0.5, "base_limit": 4.0}
		if s.Pass {
			passed++
		} else {
			e["base_status"] = "fail"
			e["base_fail_tests"] = []json.RawMessage{json.RawMessage(s.FailingInput)}
			e["base_reason"] = s.Reason
		}
		eval[s.Task] = append(eval[s.Task], e)
	}
	rate := 0.0
	if len(samples) > 0 {
		rate = float64(passed) / float64(len(samples))
	}
	b, err := json.MarshalIndent(map[string]any{"date": "2026-01-02 03:04", "hash": "fe585eb4df8c88d844eeb463ea4d0302", "eval": eval,
		"pass_at_k": map[string]any{"base": map[string]float64{"pass@1": rate}}}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "eval_results.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if o.ImageID == "" {
		o.ImageID = "sha256:" + strings.Repeat("1", 64)
	}
	if o.Hostname == "" {
		o.Hostname = "lab-1"
	}
	if o.Harness == "" {
		o.Harness = strings.Repeat("4", 64)
	}
	if o.Dataset == "" {
		o.Dataset = "HumanEvalPlus-v0.1.10"
	}
	rec := r.NewRecord("v0.0.0-test")
	rec.Host = runs.Host{Hostname: o.Hostname, OS: "linux", Arch: "amd64", Kernel: "6.1.0", CPUModel: "Example CPU", CPUs: 2, MemBytes: 24 << 30}
	rec.Assets = []runs.Asset{{ID: "humanevalplus-v0.1.10", SHA256: strings.Repeat("ab", 32), Size: 1234}}
	rec.Image = map[string]string{"id": o.ImageID, "manifest_digest": "sha256:" + strings.Repeat("2", 64)}
	rec.Limits = map[string]any{"harness_digest": o.Harness, "parallel": 2}
	rec.SelfCheck = map[string]any{"tasks": len(tasks), "passed": len(tasks)}
	rec.Summary = map[string]any{"tasks": len(tasks), "samples": len(samples), "base_pass_at_k": map[string]float64{"pass@1": rate}, "plus_scored": false, "subset": true}
	extra := map[string]any{"dataset": o.Dataset}
	if o.Label != "" {
		extra["label"] = o.Label
	}
	if o.Model != "" {
		extra["model"] = o.Model
	}
	if o.Engine != "" {
		extra["engine"] = o.Engine
	}
	rec.Extra = extra
	if err := r.Finish(rec, 0); err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// CheckBundle runs scripts/check-bundle.sh, the maintainer's check of an
// evidence bundle with cosign (tools/cosign), tar, jq and sha256sum, on
// bundle with the trusted public key at pubPath, in a network namespace
// without network. It returns the script's output; the error is non-nil
// when the script refuses the bundle.
func CheckBundle(t testing.TB, bundle, pubPath string) (string, error) {
	t.Helper()
	for _, tool := range []string{"bash", "tar", "jq", "base64", "sha256sum", "cmp"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, tool, "scripts/deps.sh installs it")
		}
	}
	argv := testenv.Offline(t, "bash", filepath.Join(testenv.RepoRoot(t), "scripts", "check-bundle.sh"), bundle, pubPath)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "COSIGN="+testenv.Cosign(t))
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
