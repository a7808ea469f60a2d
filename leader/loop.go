package leader

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"cairn/internal/fence"

	"k8s.io/client-go/rest"
)

// Loop is a leader-only component, such as the scheduler or the
// controller manager. Run works until ctx ends; every write it makes
// through cfg carries the leadership's fence, so once that leadership
// has passed the store refuses them.
type Loop struct {
	Name string
	Run  func(ctx context.Context, cfg *rest.Config) error
}

// Fenced returns a copy of cfg whose requests carry f in the fence header.
func Fenced(cfg *rest.Config, f fence.Fence) *rest.Config {
	out := rest.CopyConfig(cfg)
	value := f.String()
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Set(fence.Header, value)
			return rt.RoundTrip(r)
		})
	})
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// stopGrace bounds how long a leadership waits for its loops to return
// once it has ended; their writes are refused meanwhile anyway.
const stopGrace = 10 * time.Second

// runLoops runs every loop under ctx until ctx ends, and then waits (up to
// stopGrace) for them to return. A loop that returns early, with or
// without an error, is logged and not restarted: the leadership goes on
// with the others, as a failing controller does not stop the rest.
func runLoops(ctx context.Context, log *slog.Logger, cfg *rest.Config, loops []Loop) {
	var wg sync.WaitGroup
	for _, l := range loops {
		wg.Add(1)
		go func(l Loop) {
			defer wg.Done()
			err := l.Run(ctx, cfg)
			switch {
			case ctx.Err() != nil:
			case err != nil && !errors.Is(err, context.Canceled):
				log.Error("leader loop failed", "loop", l.Name, "err", err)
			default:
				log.Warn("leader loop returned before its leadership ended", "loop", l.Name)
			}
		}(l)
	}
	<-ctx.Done()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(stopGrace):
		log.Warn("leader loops still running after their leadership ended; their writes are refused", "grace", stopGrace)
	}
}
