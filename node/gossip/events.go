package gossip

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
)

// peerState is what this member concluded about a peer.
type peerState int

const (
	stateAlive peerState = iota // alive or suspect
	stateDead                   // declared dead by the failure detector
	stateLeft                   // left the cluster on purpose
)

func (s peerState) String() string {
	switch s {
	case stateAlive:
		return "alive"
	case stateDead:
		return "dead"
	}
	return "left"
}

// peer is a member as this one last saw it.
type peer struct {
	state   peerState
	addr    string
	leaving bool
	since   time.Time
}

// leavingMeta is the meta of a member on its way out.
const leavingMeta = "leaving"

// events receives memberlist's membership events. Memberlist calls it
// with its own locks held: it only records the news and wakes the sync
// loop.
type events struct{ g *Gossip }

// NotifyJoin implements memberlist.EventDelegate.
func (e events) NotifyJoin(n *memberlist.Node) { e.g.observe(n, stateAlive) }

// NotifyUpdate implements memberlist.EventDelegate.
func (e events) NotifyUpdate(n *memberlist.Node) { e.g.observe(n, stateAlive) }

// NotifyLeave implements memberlist.EventDelegate. Memberlist calls it for
// deaths and leaves alike; a member that announced its leave in its meta
// left.
func (e events) NotifyLeave(n *memberlist.Node) { e.g.observe(n, stateDead) }

// observe records a peer's new state and queues its Node.
func (g *Gossip) observe(n *memberlist.Node, state peerState) {
	if n.Name == g.cfg.NodeName {
		return
	}
	leaving := string(n.Meta) == leavingMeta
	if state == stateDead && leaving {
		state = stateLeft
	}
	g.mu.Lock()
	p := g.view[n.Name]
	if p == nil {
		p = &peer{}
		g.view[n.Name] = p
	}
	changed := p.state != state || p.since.IsZero()
	if changed {
		p.since = g.cfg.Clock.Now()
	}
	p.state, p.addr, p.leaving = state, n.Address(), leaving
	g.mu.Unlock()
	if changed {
		level := slog.LevelDebug
		if state == stateDead {
			level = slog.LevelWarn
		}
		g.log.Log(context.Background(), level, "gossip peer "+state.String(), "peer", n.Name, "addr", n.Address())
	}
	g.markDirty(n.Name, true)
}

// meta gives memberlist this member's meta: whether it is leaving.
type meta struct{ g *Gossip }

// NodeMeta implements memberlist.Delegate.
func (m meta) NodeMeta(limit int) []byte {
	if m.g.leaving.Load() {
		return []byte(leavingMeta)
	}
	return nil
}

// NotifyMsg implements memberlist.Delegate; agents send no messages.
func (meta) NotifyMsg([]byte) {}

// GetBroadcasts implements memberlist.Delegate.
func (meta) GetBroadcasts(overhead, limit int) [][]byte { return nil }

// LocalState implements memberlist.Delegate.
func (meta) LocalState(join bool) []byte { return nil }

// MergeRemoteState implements memberlist.Delegate.
func (meta) MergeRemoteState(buf []byte, join bool) {}

// logWriter turns memberlist's log lines ("[WARN] memberlist: ...") into
// slog records. Its INFO lines (each suspicion, each failed probe) become
// debug records: under packet loss they are routine, and the deaths that
// matter are logged by observe.
type logWriter struct{ log *slog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	level := slog.LevelInfo
	for _, pl := range []struct {
		prefix string
		level  slog.Level
	}{{"[DEBUG]", slog.LevelDebug}, {"[INFO]", slog.LevelDebug}, {"[WARN]", slog.LevelWarn}, {"[ERR]", slog.LevelError}, {"[ERROR]", slog.LevelError}} {
		if rest, ok := strings.CutPrefix(line, pl.prefix); ok {
			level, line = pl.level, strings.TrimSpace(rest)
			break
		}
	}
	line = strings.TrimPrefix(line, "memberlist: ")
	w.log.Log(context.Background(), level, line, "component", "memberlist")
	return len(p), nil
}
