package storebench

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// member identifies a cluster member by what the kill command needs.
type member struct {
	ID       uint64
	Name     string
	Endpoint string
}

// findLeader asks every endpoint for its status and returns the one that says
// it is the leader, with its name from the member list. It retries for up to
// wait, since right after start or a kill there may be no leader yet.
func (r *runner) findLeader(ctx context.Context, wait time.Duration) (member, error) {
	deadline := time.Now().Add(wait)
	for {
		m, err := r.findLeaderOnce(ctx)
		if err == nil || time.Now().After(deadline) {
			return m, err
		}
		select {
		case <-ctx.Done():
			return member{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (r *runner) findLeaderOnce(ctx context.Context) (member, error) {
	c, err := newClient(r.cfg, r.endpoints)
	if err != nil {
		return member{}, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var (
		leader member
		errs   []error
	)
	for _, ep := range c.Endpoints() {
		st, err := c.Status(ctx, ep)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ep, err))
			continue
		}
		if st.Leader != 0 && st.Header.MemberId == st.Leader {
			leader = member{ID: st.Leader, Endpoint: ep}
			break
		}
	}
	if leader.ID == 0 {
		return member{}, fmt.Errorf("storebench: no endpoint reports itself as the leader (all members must be listed in --endpoints) %v", errs)
	}
	ml, err := c.MemberList(ctx)
	if err != nil {
		return member{}, fmt.Errorf("storebench: listing members: %w", err)
	}
	for _, m := range ml.Members {
		if m.ID == leader.ID {
			leader.Name = m.Name
		}
	}
	if leader.Name == "" {
		return member{}, fmt.Errorf("storebench: leader %s (id %s) has no name in the member list",
			leader.Endpoint, strconv.FormatUint(leader.ID, 16))
	}
	return leader, nil
}
