// Package runstest holds test helpers for run folders.
package runstest

import (
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
