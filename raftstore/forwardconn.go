package raftstore

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"cairn/raftstore/transport"
)

// The forwarded-write channel. A follower opens a connection to the
// leader's peer port, sends transport.ProposeFirstByte, then writes
// requests; the leader writes one answer per request, in any order:
//
//	request: uvarint id, uvarint length, frames of commands
//	answer:  uvarint id, uvarint length, status byte, then
//	         batchOK: one frame per command: result byte + response
//	         batchNotLeader: nothing (nothing was appended)
//	         batchRefused: the reason, as text
//
// Connections run over the peer port's mutual TLS.
const (
	batchOK        = 0
	batchNotLeader = 1
	batchRefused   = 2
)

// forwardMaxAnswerBytes bounds an answer a follower accepts. Answers carry
// whole responses, so a transaction's reads can make one large; the bound
// only guards against a corrupt length.
const forwardMaxAnswerBytes = 1 << 30

var errForwardConnLost = errors.New("raftstore: connection to the leader lost")

// leaderDialer returns how a follower opens its channel to the leader's
// peer port: the peer port's TLS, then the byte that routes it.
func leaderDialer(clientTLS *tls.Config, sourceIP net.IP) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := transport.DialPeer(ctx, addr, clientTLS, sourceIP)
		if err != nil {
			return nil, err
		}
		if _, err := c.Write([]byte{transport.ProposeFirstByte}); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
}

// writeMessage writes one id-tagged message in a single Write.
func writeMessage(w io.Writer, id uint64, body []byte) (int, error) {
	buf := binary.AppendUvarint(make([]byte, 0, len(body)+2*binary.MaxVarintLen64), id)
	buf = appendFrame(buf, body)
	return w.Write(buf)
}

// readMessage reads one id-tagged message of at most max bytes.
func readMessage(r *bufio.Reader, max int) (uint64, []byte, error) {
	id, err := binary.ReadUvarint(r)
	if err != nil {
		return 0, nil, err
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return 0, nil, err
	}
	if n > uint64(max) {
		return 0, nil, fmt.Errorf("raftstore: forwarded message of %d bytes is over the %d-byte limit", n, max)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	return id, body, nil
}

// leaderConn is a follower's connection to the leader. Several batches can
// be in flight on it; its reader goroutine hands each answer to the
// batch's callback.
type leaderConn struct {
	addr   string
	conn   net.Conn
	wmu    sync.Mutex // one message written at a time
	onLost func()     // the leader closed or reset the connection

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]answerFunc
	broken  bool
}

// answerFunc receives a batch's answer, or the error that lost it; sent is
// false only when no byte of the batch reached the connection, so the
// leader cannot have applied it.
type answerFunc func(answer []byte, sent bool, err error)

// newLeaderConn starts reading answers from c. onLost, if not nil, runs
// when the connection breaks without this side closing it.
func newLeaderConn(addr string, c net.Conn, maxAnswer int, onLost func()) *leaderConn {
	lc := &leaderConn{addr: addr, conn: c, onLost: onLost, pending: make(map[uint64]answerFunc)}
	go lc.readLoop(maxAnswer)
	return lc
}

func (lc *leaderConn) readLoop(maxAnswer int) {
	r := bufio.NewReader(lc.conn)
	for {
		id, body, err := readMessage(r, maxAnswer)
		if err != nil {
			if lc.close() && lc.onLost != nil {
				lc.onLost()
			}
			return
		}
		lc.mu.Lock()
		done := lc.pending[id]
		delete(lc.pending, id)
		lc.mu.Unlock()
		if done != nil {
			done(body, true, nil)
		}
	}
}

func (lc *leaderConn) isBroken() bool {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.broken
}

// close fails every batch in flight and closes the connection. It
// reports whether this call closed it.
func (lc *leaderConn) close() bool {
	lc.mu.Lock()
	if lc.broken {
		lc.mu.Unlock()
		return false
	}
	lc.broken = true
	lost := lc.pending
	lc.pending = nil
	lc.mu.Unlock()
	lc.conn.Close()
	for _, done := range lost {
		done(nil, true, errForwardConnLost)
	}
	return true
}

// send writes one batch; done runs exactly once, with the answer or the
// error that lost it.
func (lc *leaderConn) send(payload []byte, deadline time.Time, done answerFunc) {
	lc.mu.Lock()
	if lc.broken {
		lc.mu.Unlock()
		done(nil, false, errForwardConnLost)
		return
	}
	lc.nextID++
	id := lc.nextID
	lc.pending[id] = done
	lc.mu.Unlock()

	lc.wmu.Lock()
	lc.conn.SetWriteDeadline(deadline)
	n, err := writeMessage(lc.conn, id, payload)
	lc.wmu.Unlock()
	if err == nil {
		return
	}
	lc.mu.Lock()
	_, mine := lc.pending[id]
	delete(lc.pending, id)
	lc.mu.Unlock()
	lc.close()
	if mine {
		done(nil, n > 0, err)
	}
}

// serveForwarded accepts followers' forwarded-write connections.
func (s *Server) serveForwarded(ln net.Listener) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		wg.Go(func() { s.serveForwardedConn(c) })
	}
}

// serveForwardedConn applies the batches one follower sends. Each batch's
// commands are handed to Raft in order before the next batch is read, so a
// follower's writes keep their order; answers are written as they finish.
func (s *Server) serveForwardedConn(c net.Conn) {
	stop := context.AfterFunc(s.ctx, func() { c.Close() })
	defer stop()
	defer c.Close()
	var (
		wmu      sync.Mutex
		answered sync.WaitGroup
	)
	defer answered.Wait()
	r := bufio.NewReader(c)
	if b, err := r.ReadByte(); err != nil || b != transport.ProposeFirstByte {
		return
	}
	max := forwardMaxBatchBytes + s.cfg.MaxRequestBytes + 64*1024
	for {
		id, body, err := readMessage(r, max)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && s.ctx.Err() == nil {
				s.log.Warn("forwarded writes: dropping the connection", "remote", c.RemoteAddr().String(), "err", err)
			}
			return
		}
		wait := s.startBatch(body)
		answered.Go(func() {
			answer := wait()
			wmu.Lock()
			defer wmu.Unlock()
			c.SetWriteDeadline(time.Now().Add(s.cfg.RequestTimeout))
			if _, err := writeMessage(c, id, answer); err != nil {
				c.Close() // the follower sees the loss and reports unknown outcomes
			}
		})
	}
}

// startBatch hands a batch's commands to Raft, all before any is waited
// for so that they share log appends, and returns a function that waits
// for them and builds the answer.
func (s *Server) startBatch(body []byte) func() []byte {
	if s.raft.State() != raft.Leader {
		return func() []byte { return []byte{batchNotLeader} }
	}
	cmds, err := splitFrames(body)
	if err != nil {
		return func() []byte { return append([]byte{batchRefused}, err.Error()...) }
	}
	futures := make([]raft.ApplyFuture, len(cmds))
	for i, c := range cmds {
		futures[i] = s.raft.Apply(c, s.cfg.RequestTimeout)
	}
	return func() []byte {
		out := []byte{batchOK}
		for _, f := range futures {
			out = appendFrame(out, s.resultFrame(f))
		}
		return out
	}
}

// resultFrame waits for one command and encodes its outcome.
func (s *Server) resultFrame(f raft.ApplyFuture) []byte {
	resp, err, retry := s.applyResult(f)
	switch {
	case retry:
		return []byte{resultRetry}
	case err != nil:
		return append([]byte{resultErr}, err.Error()...)
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		return append([]byte{resultErr}, err.Error()...)
	}
	return append([]byte{resultOK}, b...)
}
