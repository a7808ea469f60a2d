package apibench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cleanupTimeout bounds the final deletecollection, which deletes every
// pod of the run one by one on the server.
const cleanupTimeout = 5 * time.Minute

// runner carries one run's state between its phases.
type runner struct {
	cfg   Config
	c     *clients
	runID string
	log   *slog.Logger
	// created names the pods that were created, for the gets.
	created []string
}

// Run measures the API servers that cfg names and returns the report. Once
// the clients are built the report is always returned, also together with
// an error, so that a partial run still shows what it saw.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c, err := newClients(cfg)
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, c: c, runID: newRunID(), log: cfg.Logger}
	rep := r.newReport()
	samp := startSampler(ctx, memorySources(cfg), cfg.SampleInterval)
	err = r.measure(ctx, rep)
	rep.Memory = samp.finish(context.WithoutCancel(ctx))
	switch {
	case len(r.created) == 0:
	case cfg.Keep:
		rep.Notes = append(rep.Notes, fmt.Sprintf("kept the pods; this run's carry the label %s=%s", RunLabel, r.runID))
	default:
		rep.Cleanup = r.cleanup(ctx)
	}
	return rep, err
}

// measure runs the phases in order; a phase that cannot run ends the run.
func (r *runner) measure(ctx context.Context, rep *Report) error {
	if err := r.ensureNamespace(ctx); err != nil {
		return err
	}
	r.log.Info("creating pods", "pods", r.cfg.Pods, "clients", r.cfg.Clients, "servers", len(r.c.urls), "run", r.runID)
	rep.Results = append(rep.Results, r.create(ctx))
	if len(r.created) == 0 {
		return fmt.Errorf("apibench: no pod was created: %s", rep.Results[0].FirstError)
	}
	r.log.Info("getting random pods", "gets", r.cfg.Gets)
	rep.Results = append(rep.Results, r.get(ctx))
	r.log.Info("listing the namespace", "times", r.cfg.Lists, "page size", r.cfg.PageSize)
	for _, res := range []Result{r.list(ctx), r.listPaged(ctx)} {
		if res.Requests > 0 && res.Items < len(r.created) {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s returned %d pods, fewer than the %d created", res.Name, res.Items, len(r.created)))
		}
		rep.Results = append(rep.Results, res)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if r.cfg.Watchers < 0 {
		rep.Notes = append(rep.Notes, "watch fan-out not measured (negative --watchers)")
		return nil
	}
	r.log.Info("opening watches", "watchers", r.cfg.Watchers)
	w, err := r.watchFanOut(ctx)
	rep.Watch = w
	if err != nil {
		return err
	}
	return ctx.Err()
}

// ensureNamespace creates the namespace unless it exists, then waits until
// every server sees it: a server admits a create only into a namespace its
// own cache holds, and a replica's cache may trail the write by a moment.
func (r *runner) ensureNamespace(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.cfg.Namespace}}
	_, err := r.c.server(0).CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("apibench: creating namespace %s on %s: %w", r.cfg.Namespace, r.c.urls[0], err)
	}
	for i, cs := range r.c.servers {
		for {
			// Version "0" reads the server's cache, which admission consults.
			_, err := cs.CoreV1().Namespaces().Get(ctx, r.cfg.Namespace, metav1.GetOptions{ResourceVersion: "0"})
			if err == nil {
				break
			}
			if !apierrors.IsNotFound(err) || ctx.Err() != nil {
				return fmt.Errorf("apibench: namespace %s on %s: %w", r.cfg.Namespace, r.c.urls[i], err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// cleanup deletes the namespace's pods with one deletecollection, even
// when the run was interrupted, so that a benchmark never leaves 10,000 pods
// behind. It selects no label: the namespace is the benchmark's own.
func (r *runner) cleanup(ctx context.Context) *Cleanup {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	r.log.Info("deleting the namespace's pods", "namespace", r.cfg.Namespace)
	start := time.Now()
	err := r.c.server(0).CoreV1().Pods(r.cfg.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	c := &Cleanup{Elapsed: time.Since(start)}
	if err != nil {
		c.Error = err.Error()
	}
	return c
}

func (r *runner) newReport() *Report {
	cfg := r.cfg
	return &Report{
		Servers: r.c.urls,
		Settings: Settings{
			RunID: r.runID, Namespace: cfg.Namespace, Pods: cfg.Pods, Clients: cfg.Clients, Gets: cfg.Gets,
			Lists: cfg.Lists, PageSize: cfg.PageSize, Watchers: max(cfg.Watchers, 0), ContentType: cfg.ContentType,
			QPS: cfg.QPS, Burst: cfg.Burst, SampleInterval: cfg.SampleInterval,
		},
		Targets: cfg.Targets,
	}
}

// newRunID returns a short random ID, lower-case hex so that it is valid
// in pod names and label values.
func newRunID() string {
	b := make([]byte, 3)
	rand.Read(b)
	return hex.EncodeToString(b)
}
