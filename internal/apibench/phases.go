package apibench

import (
	"context"
	"fmt"
	"math/rand/v2"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// create creates cfg.Pods pods with every client and remembers the names
// of the ones that were created, for the gets.
func (r *runner) create(ctx context.Context) Result {
	ok := make([]bool, r.cfg.Pods)
	res := r.loop("create", r.cfg.Clients, r.cfg.Pods, func(ctx context.Context, w, i int) error {
		_, err := r.c.workers[w].CoreV1().Pods(r.cfg.Namespace).Create(ctx, newPod(r.runID, podName(r.runID, i)), metav1.CreateOptions{})
		if err == nil {
			ok[i] = true // each i belongs to one client; read after the loop ends
		}
		return err
	}).run(ctx)
	for i, created := range ok {
		if created {
			r.created = append(r.created, podName(r.runID, i))
		}
	}
	return res
}

// get reads random created pods with every client.
func (r *runner) get(ctx context.Context) Result {
	return r.loop("get", r.cfg.Clients, r.cfg.Gets, func(ctx context.Context, w, _ int) error {
		name := r.created[rand.IntN(len(r.created))]
		_, err := r.c.workers[w].CoreV1().Pods(r.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	}).run(ctx)
}

// list lists the whole namespace in one response, cfg.Lists times, one
// call at a time and each from the next server, so that the latency is the
// server's and not a queue's.
func (r *runner) list(ctx context.Context) Result {
	items := 0
	res := r.loop("list", 1, r.cfg.Lists, func(ctx context.Context, _, i int) error {
		l, err := r.c.server(i).CoreV1().Pods(r.cfg.Namespace).List(ctx, metav1.ListOptions{})
		if err == nil {
			items = len(l.Items)
		}
		return err
	}).run(ctx)
	res.Items = items
	return res
}

// listPaged lists the whole namespace in pages of cfg.PageSize, following
// continue tokens as kubectl does; one request is the whole walk.
func (r *runner) listPaged(ctx context.Context) Result {
	items := 0
	res := r.loop(fmt.Sprintf("list, limit %d", r.cfg.PageSize), 1, r.cfg.Lists, func(ctx context.Context, _, i int) error {
		pods := r.c.server(i).CoreV1().Pods(r.cfg.Namespace)
		n, cont := 0, ""
		for {
			l, err := pods.List(ctx, metav1.ListOptions{Limit: r.cfg.PageSize, Continue: cont})
			if err != nil {
				return err
			}
			n += len(l.Items)
			if cont = l.Continue; cont == "" {
				break
			}
		}
		items = n
		return nil
	}).run(ctx)
	res.Items = items
	return res
}

// loop builds a closed-loop phase with the run's timeout and logger.
func (r *runner) loop(name string, clients, total int, o op) loop {
	return loop{name: name, clients: clients, total: total, timeout: r.cfg.RequestTimeout, log: r.log, op: o}
}
