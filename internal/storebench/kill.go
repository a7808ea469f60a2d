package storebench

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// expandKill fills the placeholders of a kill command for member m.
func expandKill(command string, m member) string {
	return strings.NewReplacer("{member}", m.Name, "{endpoint}", m.Endpoint).Replace(command)
}

// kill runs the user's kill command for m through sh and waits for it, so
// that when it returns the member is gone (kill -9 takes effect at once).
func (r *runner) kill(ctx context.Context, m member) error {
	command := expandKill(r.cfg.KillCommand, m)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sh", "-c", command).CombinedOutput()
	if err != nil {
		return fmt.Errorf("storebench: kill command %q for leader %s failed: %w: %s",
			command, m.Name, err, strings.TrimSpace(string(out)))
	}
	return nil
}
