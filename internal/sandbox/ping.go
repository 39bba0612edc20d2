package sandbox

import (
	"context"
	"fmt"
	"time"

	"github.com/moby/moby/client"
)

// Ping reports whether the engine still answers, within 10 s: a run that
// lost a container asks it to tell a lost engine (the run's failure) from
// a container that died under its program.
func (e *Engine) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := e.cli.Ping(ctx, client.PingOptions{}); err != nil {
		return fmt.Errorf("the container engine does not answer: %w", err)
	}
	return nil
}
