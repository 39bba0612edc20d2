// Package wire is the host's side of the protocol spoken with the
// supervisor that runs samples in the sandbox, and the supervisor itself:
// a [Job] goes out as one frame, each of its results comes back as a
// [Record] and its end as a [JobEnd], every frame tagged with HMAC-SHA256
// under a key the host makes for each container (the supervisor's frames
// numbered, so that none can be dropped, replayed or reordered), and the
// host holds every job to its limits by its own clock of the container.
//
// The Python the protocol is spoken with sits beside the Go that speaks
// it: harness/supervisor.py (the supervisor, its zygote and the children
// that run programs) and harness/evalplus_driver.py (a job scored by
// EvalPlus's own code). Both are compiled into repro and pinned by their
// tree digest, [HarnessDigest]; [WriteHarness] writes them out and
// [CheckHarness] checks them before every container start.
//
// A [Worker] drives one supervisor at a time, started by a [Launcher]
// ([SandboxLauncher] in a fresh container of the evaluator image, with
// [SupervisorLimits] or [LargeLimits]). What a record means, and every
// verdict, is decided by package codebench, never here.
package wire
