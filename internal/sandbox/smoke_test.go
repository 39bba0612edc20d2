package sandbox_test

import (
	"context"
	"testing"

	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

func TestSmoke(t *testing.T) {
	e := sandboxtest.Engine(t)
	img := sandboxtest.Image(t, e)
	s := sandbox.Spec{Image: img, Cmd: []string{"python3", "-c", "import os,sys; print('hi', os.getuid()); print(sorted(os.environ)); sys.exit(3)"}, Limits: sandbox.DefaultLimits(), Results: true}
	o, err := e.Run(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v stdout=%q stderr=%q", o, o.Stdout, o.Stderr)
}
