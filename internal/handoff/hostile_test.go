package handoff

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/testenv"
)

// canary is the file the hostile values try to create when a generated
// script runs them as shell code: they name it through $CANARY_FILE
// (an absolute path no script touches, outside the bundle's work folders
// that run.sh deletes), so a value needs no "/" and can be a file name.
const canary = "$CANARY_FILE"

// hostileValues hold shell metacharacters: command substitution both ways,
// separators, && and quotes of both kinds; the first is the log_file of the
// report that a bundle ran ("x$(touch …)`id`.log"). The last holds a
// newline, which the configuration parser refuses.
var hostileValues = []string{
	"x$(touch " + canary + ")`touch " + canary + "`;touch " + canary + "&&touch " + canary + ".log",
	`a'b";touch ` + canary + `;'";touch ` + canary + ` #`,
	"line\ntouch " + canary,
}

// configField is one string the configuration carries, and how to set it.
type configField struct {
	name string
	set  func(w *world, v string) bool // false: the field cannot hold v here (a path that cannot be made)
}

// stringFields lists every string of the world's configuration (struct
// fields, list elements, map values), found by reflection, so that a new
// field is covered without editing the test. Path fields are made to exist
// under the hostile name (the directory is renamed or linked), so that the
// bundle is still ready and its scripts get to use them.
func stringFields(w *world) []configField {
	var out []configField
	var walk func(v reflect.Value, name string, get func(*world) reflect.Value)
	walk = func(v reflect.Value, name string, get func(*world) reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() {
				return
			}
			walk(v.Elem(), name, func(w *world) reflect.Value { return get(w).Elem() })
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				f := v.Type().Field(i)
				tag := strings.Split(f.Tag.Get("json"), ",")[0]
				walk(v.Field(i), name+"."+tag, func(w *world) reflect.Value { return get(w).Field(i) })
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i), name+"["+itoa(i)+"]", func(w *world) reflect.Value { return get(w).Index(i) })
			}
		case reflect.Map:
			for _, k := range v.MapKeys() {
				key := k
				out = append(out, configField{name + "." + key.String(), func(w *world, s string) bool {
					get(w).SetMapIndex(key, reflect.ValueOf(s))
					return true
				}})
			}
		case reflect.String:
			out = append(out, configField{name, func(w *world, s string) bool {
				f := get(w)
				if old := f.String(); filepath.IsAbs(old) && strings.HasPrefix(old, w.root) {
					if strings.Contains(s, "/") || strings.Contains(s, "\n") {
						return false
					}
					moved := filepath.Join(filepath.Dir(old), s)
					if err := os.Rename(old, moved); err != nil {
						return false
					}
					s = moved
				}
				f.SetString(s)
				return true
			}})
		}
	}
	walk(reflect.ValueOf(w.cfg), "config", func(w *world) reflect.Value { return reflect.ValueOf(w.cfg) })
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestBundleScriptsHostileValues feeds every string of the configuration,
// one at a time, with shell metacharacters, makes a Slurm bundle, and runs
// each generated script (preflight.sh in both modes, run.sh, job.sbatch)
// with bash. The canary file must never appear: a value is data, never
// code. A configuration the parser refuses is fine (and expected for the
// newline), as long as the refusal names the field.
func TestBundleScriptsHostileValues(t *testing.T) {
	testenv.Heavy(t, "the sweep of every hostile value through every bundle script")
	accepted := map[string]bool{}
	for _, nw := range []func(testing.TB) *world{newMiniGoWorld, newDLRMWorld} {
		base := nw(t)
		base.cfg.LogFile = "mllog.txt"
		base.cfg.Env = map[string]string{"NCCL_DEBUG": "INFO"}
		base.cfg.Slurm = &SlurmConfig{Partition: "gpu", Account: "ml", Time: "1:00:00"}
		base.cfg.Command = append(base.cfg.Command, "--extra")
		for fi := range stringFields(base) {
			for vi, v := range hostileValues {
				w := nw(t)
				w.cfg.LogFile = base.cfg.LogFile
				w.cfg.Env = map[string]string{"NCCL_DEBUG": "INFO"}
				w.cfg.Slurm = &SlurmConfig{Partition: "gpu", Account: "ml", Time: "1:00:00"}
				w.cfg.Command = append(w.cfg.Command, "--extra")
				field := stringFields(w)[fi]
				if !field.set(w, v) {
					continue
				}
				name := w.name + " " + field.name
				p, err := handoffQuiet(w)
				if err != nil {
					if strings.Contains(err.Error(), "\n") {
						t.Errorf("%s = value %d: refusal spans lines: %v", name, vi, err)
					}
					continue
				}
				if !p.Ready() {
					continue // a plan: its preflight refuses at once; the pins/paths did not hold
				}
				accepted[field.name] = true
				runAllScripts(t, w, name+" = value "+itoa(vi))
			}
		}
	}
	// The fields that carry free text into the scripts must be among those
	// that were accepted and run, or the test proves nothing.
	for _, f := range []string{"config.log_file", "config.command[1]", "config.env.NCCL_DEBUG", "config.node.work_dir", "config.volumes.source.path", "config.volumes.output.path", "config.volumes.checkpoint.path"} {
		if !accepted[f] {
			t.Errorf("no hostile value of %s was accepted, so its scripts never ran", f)
		}
	}
}

// handoffQuiet writes a Slurm bundle from w's configuration after the
// strict parser, and returns the plan, or the parser's or Handoff's error.
func handoffQuiet(w *world) (*Plan, error) {
	b, err := json.Marshal(w.cfg)
	if err != nil {
		return nil, err
	}
	c, err := ParseConfig(b)
	if err != nil {
		return nil, err
	}
	w.cfg = c
	return Handoff(context.Background(), w.opts(TargetSlurm), w.out, false)
}

// runAllScripts runs each script of w's bundle and fails the test if the
// canary appears anywhere under the world's folder.
func runAllScripts(t *testing.T, w *world, what string) {
	t.Helper()
	cwd := w.path("cwd")
	os.MkdirAll(cwd, 0o755)
	bin := gpuStack(t, 8, w.name)
	results := w.path("results")
	os.MkdirAll(results, 0o755)
	canaryFile := filepath.Join(w.path("canary"), "pwned")
	os.MkdirAll(filepath.Dir(canaryFile), 0o755)
	env := []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + cwd, "TMPDIR=" + cwd, "CANARY_FILE=" + canaryFile}
	runs := [][]string{
		{filepath.Join(w.out, PreflightFile), "--mode", "node"},
		{filepath.Join(w.out, PreflightFile), "--mode", "container"},
		{filepath.Join(w.out, RunFile), "0"},
		{filepath.Join(w.out, SbatchFile)},
	}
	for _, args := range runs {
		cmd := exec.Command("bash", args...)
		cmd.Dir = cwd
		cmd.Env = append(env, "REPRO_RESULTS="+results, "REPRO_WORK_DIR="+w.path("work-run"),
			"REPRO_SOURCE_DIR="+w.cfg.Volumes.Source.Path, "REPRO_BUNDLE_DIR="+w.out, "SLURM_JOB_ID=7")
		out, _ := cmd.CombinedOutput()
		if _, err := os.Stat(canaryFile); err == nil {
			t.Fatalf("%s: running %s created the canary: a configuration value ran as shell code\n%s", what, filepath.Base(args[0]), out)
		}
	}
}

// The bundle README shows configuration values as written: a log_file
// with backticks stays in a code span sized to it (it used to print the
// backticks as quotes), and Markdown or HTML in free text is escaped.
func TestReadmeRendersValuesLiterally(t *testing.T) {
	w := newDLRMWorld(t)
	w.cfg.LogFile = "x$(touch y)`id`.log"
	w.cfg.Command = []string{"./run.sh", "``a`b"}
	w.cfg.CriteoLicense.AcceptedBy = "<img src=x onerror=alert(1)> *Eve* [link](http://x) | cell"
	m := w.bundle(t, TargetSlurm)
	b, err := os.ReadFile(filepath.Join(w.out, ReadmeFile))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, want := range []string{
		"MLLOG file ``x$(touch y)`id`.log``",
		"```./run.sh ``a`b```",
		`accepted by \<img src=x onerror=alert(1)\> \*Eve\* \[link\](http://x) \| cell on`,
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("README lacks %q", want)
		}
	}
	if m.LogFile != w.cfg.LogFile {
		t.Errorf("manifest log_file %q", m.LogFile)
	}
	for in, want := range map[string]string{"a": "`a`", "`": "`` ` ``", " a ": "`  a  `", "a``b": "```a``b```"} {
		if got := markdownCode(in); got != want {
			t.Errorf("markdownCode(%q) = %q, want %q", in, got, want)
		}
	}
}
