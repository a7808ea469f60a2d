package linearizability

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// status asks replica i for its Maintenance Status, briefly.
func (c *cluster) status(ctx context.Context, i int) (*clientv3.StatusResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := c.admin[i].Status(ctx, c.members[i].storeAddr)
	if err != nil {
		return nil, fmt.Errorf("linearizability: status of %s: %w", c.members[i].name, err)
	}
	return st, nil
}

// leader returns the index of the replica that leads: one that reports
// itself as leader, the highest term winning while a deposed leader has not
// noticed yet. Only replicas given in among are asked (all when nil).
func (c *cluster) leader(ctx context.Context, among []int) (int, error) {
	if among == nil {
		among = []int{0, 1, 2}
	}
	best, bestTerm := -1, uint64(0)
	for _, i := range among {
		if !c.members[i].running() {
			continue
		}
		st, err := c.status(ctx, i)
		if err != nil {
			continue
		}
		if st.Leader != 0 && st.Leader == st.Header.MemberId && st.RaftTerm >= bestTerm {
			best, bestTerm = i, st.RaftTerm
		}
	}
	if best < 0 {
		return -1, errors.New("linearizability: no replica reports itself as leader")
	}
	return best, nil
}

// waitLeader polls until a leader is found among the given replicas.
func (c *cluster) waitLeader(ctx context.Context, among []int) (int, error) {
	for {
		i, err := c.leader(ctx, among)
		if err == nil {
			return i, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("%w (waited until %v)", err, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitHealthy polls until every replica runs, all agree on one leader that
// agrees it leads, and a linearizable read succeeds through each of them.
func (c *cluster) waitHealthy(ctx context.Context) error {
	var last error
	for {
		if last = c.healthy(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("linearizability: cluster not healthy: %w", last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *cluster) healthy(ctx context.Context) error {
	leaders := map[uint64]bool{}
	self := false
	for i, m := range c.members {
		if !m.running() {
			return fmt.Errorf("%s is not running", m.name)
		}
		st, err := c.status(ctx, i)
		if err != nil {
			return err
		}
		leaders[st.Leader] = true
		self = self || (st.Leader != 0 && st.Leader == st.Header.MemberId)
	}
	if len(leaders) != 1 || leaders[0] || !self {
		return fmt.Errorf("replicas disagree on the leader: %v", leaders)
	}
	for i, m := range c.members {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := c.admin[i].Get(rctx, "health")
		cancel()
		if err != nil {
			return fmt.Errorf("linearizable read on %s: %w", m.name, err)
		}
	}
	return nil
}
