package handoff

import (
	"strings"
	"text/template"
)

const readmeTemplate = `# repro handoff bundle: {{.M.Workload}}

{{if .M.Ready -}}
**Ready.** Every requirement that can be checked before the job was checked
on {{lit .M.CreatedOn}} at {{.M.CreatedAt.Format "2006-01-02 15:04:05 UTC"}}; the
rest is checked by the preflight on the target node, which starts nothing
unless all of it holds.
{{- else -}}
**PLAN, NOT READY.** This bundle was written with --plan for review. Its
preflight refuses to run. These requirements are not met:
{{range .M.Missing}}
- {{lit .Requirement}}: {{lit .Problem}}
{{- end}}
{{- end}}

- manifest: manifest.json, sha256 {{.M.Digest}}
- benchmark: MLPerf Training {{.M.Benchmark}}, compliance ruleset {{.M.Ruleset}}, {{len .M.Runs}} runs
- target: {{.M.Target}}{{if .M.Container}} ({{.M.Container}}){{end}}
- image: {{if .M.Image}}{{code .M.Image}}{{else}}(none){{end}}{{if .M.ImageCUDA}}, CUDA {{lit .M.ImageCUDA}}{{end}}
- made by repro {{lit .M.ReproVersion}} on {{lit .M.CreatedOn}}

Do not edit the files of this bundle: repro handoff verify and repro handoff
ingest render them again from manifest.json and refuse a bundle that
differs. Change the configuration and make a new bundle instead.

## Running it
{{if eq .M.Target "slurm"}}
From this folder, on the cluster's login node:

    sbatch slurm/job.sbatch

The job (one exclusive node, {{.M.GPUs}} GPUs) checks that preflight.sh and
run.sh are the ones repro wrote, runs preflight.sh on the node, then inside
the image, and starts the runs only if both pass. It writes everything to
{{code .OutputDir}}/repro-{{.M.Workload}}-JOBID/. Exit status 3 means a
precondition failed and nothing ran; the FAIL lines in the job output say
what and how to fix it.
{{- else}}
Create the claims and the secret named under "Data classes" below, then:

    kubectl apply -f kubernetes/configmap.yaml -f kubernetes/networkpolicy.yaml -f kubernetes/job.yaml

The Job runs one pod per run, one at a time, never retried. Each pod runs
preflight.sh as an init container in the image; the run starts only if it
passes. Results go to repro-{{.M.Workload}}-{{.M.ShortDigest}}/ in the output
claim.
{{- end}}

When the results are back on the machine that holds this bundle:

    repro handoff ingest BUNDLE RESULTS

It verifies this bundle, the preflight reports, and every result log
(MLLOG compliance, image digest, pins, distinct seeds), and records the run.

## Image
{{with .M.ImageVerification}}{{if eq .Policy "none"}}
No trust file policy applied to the image: it is pinned by digest only.
{{else}}
The image was admitted under the trust file {{lit .TrustFile}} (policy
**{{lit .Policy}}**, {{lit .TrustFileDigest}}), read from {{lit .Store}}.
{{- with .Verified}}
{{- with .Signature}}
- signature: by key {{lit .KeyName}} ({{lit .KeyID}}), signed {{.SignedAt.Format "2006-01-02 15:04:05 UTC"}}
{{- end}}
{{- with .SBOM}}
- SBOM: {{lit .Digest}}, {{.Packages}} components, by key {{lit .KeyName}}
{{- end}}
{{- with .Scan}}
- scan: {{.SignedAt.Format "2006-01-02 15:04:05 UTC"}} (at most {{.MaxAgeDays}} days old allowed), {{.Unwaived}} unwaived finding(s), highest {{lit .MaxUnwaivedSeverity}} (at most {{lit .MaxSeverity}}), feed {{lit .FeedDigest}}
{{- end}}
{{- end}}

The envelopes are kept in this bundle ({{range $i, $e := .Evidence}}{{if $i}}, {{end}}{{lit $e.File}}{{end}});
repro handoff verify checks them again against the trust file.
{{end}}{{else}}
No trust file policy applied to the image: it is pinned by digest only.
{{end}}
## Pins
{{if .M.Pins}}
| requirement | input | volume | path | sha256 | origin |
|---|---|---|---|---|---|
{{- range .M.Pins}}
| {{cell .Requirement}} | {{cell .Name}} | {{cell .Class}} | {{cell .Path}} | {{cell .Kind}} {{cell .SHA256}}{{if .MD5}} (MD5 {{cell .MD5}}){{end}} | {{cell .Origin}} |
{{- end}}

Origins: catalog = reviewed pin compiled into repro; first-use = SHA-256
recorded the first time the file passed its published MD5 (any later file
that differs is refused); review = digest a reviewer recorded in the
configuration; recorded-here = SHA-256 computed by repro handoff after the
published MD5 or size matched.
{{else}}
No input is pinned yet.
{{end}}
## Decisions
{{with .M.Decisions.ProGames}}
Professional Go games: **{{lit .Decision}}**{{if .Reviewer}}, reviewed by {{lit .Reviewer}}{{end}}{{if .Date}} on {{lit .Date}}{{end}}.{{if .Rationale}} {{lit .Rationale}}.{{end}}
{{- if .SourceURL}} Source: {{lit .SourceURL}}.{{end}}
{{- with .LicenseRuling}} License ruling: {{lit .License}}, {{lit .Ruling}} ({{lit .Reviewer}}, {{lit .Date}}).{{end}}
{{- if eq .Decision "include"}} An included game set implies the v0.5 quality metric (move prediction); the v0.7+ score does not use it.{{end}}
{{end}}
{{- with .M.Decisions.DatasetLicense}}
Criteo 1TB Click Logs license **{{lit .License}}** accepted by {{lit .AcceptedBy}} on {{lit .Date}}{{if .Terms}} ({{lit .Terms}}){{end}}.
{{end}}
{{- with .M.Decisions.CheckpointFirstUse}}
Checkpoint {{lit .ID}} first verified on {{.FirstVerified.Format "2006-01-02 15:04:05 UTC"}} on {{lit .Host}}: sha256 {{lit .SHA256}}, {{.Size}} bytes, MD5 {{lit .MD5}}.
{{end}}
{{- with .M.Runtime}}
Runtime in the image: python {{lit (or .Python "-")}}, torch {{lit (or .Torch "-")}}, tensorflow {{lit (or .TensorFlow "-")}}, mlperf\_logging {{lit (or .MLPerfLogging "-")}}.
{{end}}
{{- with .M.DriverFloor}}
GPU floor (CUDA {{.CUDA}}): {{.Min}}{{if .ForwardCompat}}, or forward-compatible {{join .ForwardCompat ", "}}{{end}}. Source: {{.Source}}.
{{end}}
## Runs

{{if .M.Command}}Entry point, run in a copy of the source: {{code (join .M.Command " ")}}{{if .M.LogFile}}; MLLOG file {{code .M.LogFile}}{{else}}; MLLOG on standard output{{end}}.{{else}}No entry point is set.{{end}}

| run | seed |
|---|---|
{{- range .M.Runs}}
| {{.Index}} | {{.Seed}} |
{{- end}}

## Checks
| requirement | where | what | result |
|---|---|---|---|
{{- range .M.Checks}}
| {{cell .Requirement}} | {{.Where}}{{if .Host}} ({{cell .Host}}){{end}} | {{cell .What}} | {{.Result}} |
{{- end}}

"here" checks were made by repro handoff when this bundle was written;
"node" and "container" checks are made by preflight.sh on the target,
before anything runs, every time the job starts.

## Relaxed controls

Every control of the security review holds (non-root, no capabilities,
no-new-privileges, read-only root, bounded resources, explicit writable
mounts) except:
{{range .M.Relaxations}}
- **{{.Control}}** ({{.Target}}): {{.Why}}.
{{- end}}

## Data classes

The licensed dataset, the checkpoint, the outputs and any credentials are
separate volumes with separate permissions; inputs are mounted read-only,
the output volume is the only writable one besides the scratch /work and
/tmp.
{{range .M.Retention}}
### {{.Class}}

- where: {{lit .Location}}
- who may read it: {{lit .Readers}}
- how long it is kept: {{lit .Kept}}
- how it is deleted:
{{range .Delete}}
      {{.}}
{{- end}}
{{end}}
## Files
{{range .M.Files}}
- {{lit .}}
{{- end}}
{{- with .M.ImageVerification}}{{range .Evidence}}
- {{lit .File}}
{{- end}}{{end}}
`

func renderReadme(m *Manifest, d *renderData) ([]byte, error) {
	data := struct {
		*renderData
		OutputDir string
	}{d, d.NodeDir[ClassOutput]}
	t, err := template.New("readme").Funcs(template.FuncMap{
		"join": strings.Join,
		"code": markdownCode,
		"lit":  markdownText,
		"cell": markdownText,
	}).Option("missingkey=error").Parse(readmeTemplate)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// markdownCode renders s as a Markdown code span that shows it literally:
// the fence is one backtick longer than the longest run of backticks in
// s, and padded with spaces (which Markdown strips) when s starts or ends
// with a backtick or a space.
func markdownCode(s string) string {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if s != "" && (s[0] == '`' || s[0] == ' ' || s[len(s)-1] == '`' || s[len(s)-1] == ' ') {
		s = " " + s + " "
	}
	return fence + s + fence
}

// markdownSpecial holds the characters that can start Markdown or HTML
// syntax inside a line (emphasis, code, links, tags, entities, tables,
// strikethrough, escapes).
const markdownSpecial = "\\`*_[]<>&|~"

// markdownText escapes s so that Markdown shows it as written (a
// backslash before each character of markdownSpecial), inside a table
// cell too.
func markdownText(s string) string {
	if !strings.ContainsAny(s, markdownSpecial) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(markdownSpecial, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
