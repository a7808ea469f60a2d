package raftstore

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"cairn/raftstore/mvcc"

	"github.com/hashicorp/raft"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
)

// applyResult is what the FSM returns for every command: the response the
// client gets, or the deterministic error it gets instead.
type applyResult struct {
	resp proto.Message
	err  error
}

// applier applies one decoded command.
type applier func(msg proto.Message) (proto.Message, error)

// fsm is the replicated state machine: the MVCC store plus the small tables
// that must agree on every replica (member attributes, alarms, the
// leadership epoch). Raft calls ApplyBatch from one goroutine.
type fsm struct {
	store     *mvcc.Store
	clusterID uint64
	log       *slog.Logger
	appliers  map[commandType]applier

	mu     sync.RWMutex
	attrs  map[uint64]*pb.Member // name and client URLs by member ID
	alarms map[alarmKey]bool
	epoch  uint64 // bumped by every new leader (cmdLeaderBarrier)

	applied atomic.Uint64
	waiter  *indexWaiter
	// waitDurable holds an entry back until it is on this replica's disk
	// (see leaderLog); nil when the log is written before Raft goes on.
	waitDurable func(index uint64) error
	onApply     func(t commandType, err error) // metrics hook, may be nil
}

type alarmKey struct {
	member uint64
	alarm  pb.AlarmType
}

func newFSM(clusterID uint64, log *slog.Logger) *fsm {
	f := &fsm{
		store:     mvcc.New(),
		clusterID: clusterID,
		log:       log,
		attrs:     map[uint64]*pb.Member{},
		alarms:    map[alarmKey]bool{},
		waiter:    newIndexWaiter(),
	}
	f.appliers = map[commandType]applier{
		cmdPut:           f.applyPut,
		cmdDeleteRange:   f.applyDeleteRange,
		cmdTxn:           f.applyTxn,
		cmdCompact:       f.applyCompact,
		cmdLeaseGrant:    f.applyLeaseGrant,
		cmdLeaseRevoke:   f.applyLeaseRevoke,
		cmdMemberAttrs:   f.applyMemberAttrs,
		cmdMemberForget:  f.applyMemberForget,
		cmdAlarm:         f.applyAlarm,
		cmdLeaderBarrier: f.applyLeaderBarrier,
	}
	return f
}

// Apply implements raft.FSM.
func (f *fsm) Apply(l *raft.Log) interface{} {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch implements raft.BatchingFSM. Decode failures and unknown
// command types panic: a replica that cannot apply an entry the others
// applied must stop rather than diverge.
func (f *fsm) ApplyBatch(logs []*raft.Log) []interface{} {
	out := make([]interface{}, len(logs))
	if n := len(logs); n > 0 && f.waitDurable != nil {
		if err := f.waitDurable(logs[n-1].Index); err != nil {
			panic(fmt.Sprintf("raftstore: entry %d cannot be applied: %v", logs[n-1].Index, err))
		}
	}
	for i, l := range logs {
		if l.Type == raft.LogCommand {
			out[i] = f.applyCommand(l)
		}
	}
	if n := len(logs); n > 0 {
		f.applied.Store(logs[n-1].Index)
		f.waiter.advance(logs[n-1].Index)
	}
	return out
}

func (f *fsm) applyCommand(l *raft.Log) *applyResult {
	if len(l.Data) == 0 {
		panic(fmt.Sprintf("raftstore: empty command at index %d", l.Index))
	}
	t := commandType(l.Data[0])
	apply, ok := f.appliers[t]
	if !ok {
		panic(fmt.Sprintf("raftstore: unknown command type %d at index %d", l.Data[0], l.Index))
	}
	msg := commandMessage(t)
	if err := proto.Unmarshal(l.Data[1:], msg); err != nil {
		panic(fmt.Sprintf("raftstore: decoding %s command at index %d: %v", t, l.Index, err))
	}
	resp, err := apply(msg)
	if f.onApply != nil {
		f.onApply(t, err)
	}
	return &applyResult{resp: resp, err: err}
}

func (f *fsm) noSpace() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for k := range f.alarms {
		if k.alarm == pb.AlarmType_NOSPACE {
			return true
		}
	}
	return false
}

func (f *fsm) applyPut(msg proto.Message) (proto.Message, error) {
	if f.noSpace() {
		return nil, ErrNoSpace
	}
	return f.store.Put(msg.(*pb.PutRequest))
}

func (f *fsm) applyDeleteRange(msg proto.Message) (proto.Message, error) {
	return f.store.DeleteRange(msg.(*pb.DeleteRangeRequest))
}

func (f *fsm) applyTxn(msg proto.Message) (proto.Message, error) {
	req := msg.(*pb.TxnRequest)
	if f.noSpace() && txnHasPut(req) {
		return nil, ErrNoSpace
	}
	return f.store.Txn(req)
}

func txnHasPut(req *pb.TxnRequest) bool {
	for _, ops := range [][]*pb.RequestOp{req.Success, req.Failure} {
		for _, op := range ops {
			if op.GetRequestPut() != nil {
				return true
			}
			if t := op.GetRequestTxn(); t != nil && txnHasPut(t) {
				return true
			}
		}
	}
	return false
}

func (f *fsm) applyCompact(msg proto.Message) (proto.Message, error) {
	return f.store.Compact(msg.(*pb.CompactionRequest).Revision)
}

func (f *fsm) applyLeaseGrant(msg proto.Message) (proto.Message, error) {
	req := msg.(*pb.LeaseGrantRequest)
	if f.noSpace() {
		return nil, ErrNoSpace
	}
	if err := f.store.LeaseGrant(req.ID, req.TTL); err != nil {
		return nil, err
	}
	return &pb.LeaseGrantResponse{ID: req.ID, TTL: req.TTL, Header: &pb.ResponseHeader{Revision: f.store.Rev()}}, nil
}

func (f *fsm) applyLeaseRevoke(msg proto.Message) (proto.Message, error) {
	return f.store.LeaseRevoke(msg.(*pb.LeaseRevokeRequest).ID)
}

func (f *fsm) applyMemberAttrs(msg proto.Message) (proto.Message, error) {
	m := msg.(*pb.Member)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attrs[m.ID] = &pb.Member{ID: m.ID, Name: m.Name, ClientURLs: m.ClientURLs}
	return m, nil
}

func (f *fsm) applyMemberForget(msg proto.Message) (proto.Message, error) {
	id := msg.(*pb.MemberRemoveRequest).ID
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.attrs, id)
	for k := range f.alarms {
		if k.member == id {
			delete(f.alarms, k)
		}
	}
	return &pb.Member{ID: id}, nil
}

func (f *fsm) applyAlarm(msg proto.Message) (proto.Message, error) {
	req := msg.(*pb.AlarmRequest)
	f.mu.Lock()
	defer f.mu.Unlock()
	key := alarmKey{member: req.MemberID, alarm: req.Alarm}
	switch req.Action {
	case pb.AlarmRequest_ACTIVATE:
		if req.Alarm == pb.AlarmType_NONE {
			return nil, ErrUnknownAlarm
		}
		f.alarms[key] = true
	case pb.AlarmRequest_DEACTIVATE:
		for k := range f.alarms {
			if (req.MemberID == 0 || k.member == req.MemberID) && (req.Alarm == pb.AlarmType_NONE || k.alarm == req.Alarm) {
				delete(f.alarms, k)
			}
		}
	}
	return &pb.AlarmResponse{Alarms: f.unsafeAlarmList()}, nil
}

// applyLeaderBarrier bumps the leadership epoch and records it under
// LeaderFenceKey, so that writes made for an older leader can be refused
// by a plain transaction compare on that key (see apiserver/storage).
func (f *fsm) applyLeaderBarrier(msg proto.Message) (proto.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.epoch++
	value := strconv.FormatUint(f.epoch, 10)
	if _, err := f.store.Put(&pb.PutRequest{Key: []byte(LeaderFenceKey), Value: []byte(value)}); err != nil {
		return nil, err
	}
	return &pb.ResponseHeader{MemberId: msg.(*pb.RequestHeader).ID, RaftTerm: f.epoch}, nil
}

// alarmList returns the active alarms in a stable order.
func (f *fsm) alarmList() []*pb.AlarmMember {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.unsafeAlarmList()
}

func (f *fsm) unsafeAlarmList() []*pb.AlarmMember {
	out := make([]*pb.AlarmMember, 0, len(f.alarms))
	for k := range f.alarms {
		out = append(out, &pb.AlarmMember{MemberID: k.member, Alarm: k.alarm})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].MemberID != out[j].MemberID {
			return out[i].MemberID < out[j].MemberID
		}
		return out[i].Alarm < out[j].Alarm
	})
	return out
}

// memberAttrs returns the published name and client URLs of a member.
func (f *fsm) memberAttrs(id uint64) (*pb.Member, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	m, ok := f.attrs[id]
	return m, ok
}

// Snapshot implements raft.FSM. It is cheap: the MVCC snapshot is an
// immutable view and the small tables are copied.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	h := snapshotHeader{
		ClusterID: f.clusterID,
		Epoch:     f.epoch,
		Applied:   f.applied.Load(),
		Alarms:    f.unsafeAlarmList(),
	}
	for _, m := range f.attrs {
		h.Members = append(h.Members, &pb.Member{ID: m.ID, Name: m.Name, ClientURLs: m.ClientURLs})
	}
	f.mu.RUnlock()
	sort.Slice(h.Members, func(i, j int) bool { return h.Members[i].ID < h.Members[j].ID })
	sn := f.store.Snapshot()
	h.Revision = sn.Rev()
	h.CompactRevision = f.store.CompactRev()
	return &fsmSnapshot{header: h, mvcc: sn}, nil
}

// Restore implements raft.FSM: it replaces the whole state with a snapshot.
// A corrupt snapshot leaves the old state in place.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 1<<20)
	h, err := readSnapshotHeader(br)
	if err != nil {
		return err
	}
	if err := f.store.Restore(br); err != nil {
		return fmt.Errorf("raftstore: restoring snapshot: %w", err)
	}
	f.mu.Lock()
	f.attrs = map[uint64]*pb.Member{}
	for _, m := range h.Members {
		f.attrs[m.ID] = m
	}
	f.alarms = map[alarmKey]bool{}
	for _, a := range h.Alarms {
		f.alarms[alarmKey{member: a.MemberID, alarm: a.Alarm}] = true
	}
	f.epoch = h.Epoch
	f.mu.Unlock()
	f.applied.Store(h.Applied)
	f.waiter.advance(h.Applied)
	f.log.Info("state restored from a snapshot", "revision", h.Revision, "applied_index", h.Applied, "keys", f.store.KeyCount())
	return nil
}

// snapshotMagic starts every state snapshot, whether Raft's own or a file
// written by `cairn snapshot save`.
const snapshotMagic = "CAIRNSNAP"

const snapshotVersion = 1

// snapshotHeader precedes the MVCC records in a snapshot.
type snapshotHeader struct {
	Version         int               `json:"version"`
	ClusterID       uint64            `json:"cluster_id"`
	Revision        int64             `json:"revision"`
	CompactRevision int64             `json:"compact_revision"`
	Applied         uint64            `json:"applied_index"`
	Epoch           uint64            `json:"epoch"`
	Members         []*pb.Member      `json:"members,omitempty"`
	Alarms          []*pb.AlarmMember `json:"alarms,omitempty"`
}

func writeSnapshotHeader(w io.Writer, h snapshotHeader) error {
	h.Version = snapshotVersion
	body, err := json.Marshal(h)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, len(snapshotMagic)+binary.MaxVarintLen64+len(body))
	buf = append(buf, snapshotMagic...)
	buf = binary.AppendUvarint(buf, uint64(len(body)))
	buf = append(buf, body...)
	_, err = w.Write(buf)
	return err
}

// errBadSnapshot is wrapped by every snapshot decoding failure.
var errBadSnapshot = errors.New("raftstore: not a valid Cairn snapshot")

func readSnapshotHeader(r *bufio.Reader) (snapshotHeader, error) {
	var h snapshotHeader
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != snapshotMagic {
		return h, fmt.Errorf("%w: missing header", errBadSnapshot)
	}
	n, err := binary.ReadUvarint(r)
	if err != nil || n > 64<<20 {
		return h, fmt.Errorf("%w: bad header length", errBadSnapshot)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return h, fmt.Errorf("%w: truncated header", errBadSnapshot)
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return h, fmt.Errorf("%w: header: %v", errBadSnapshot, err)
	}
	if h.Version != snapshotVersion {
		return h, fmt.Errorf("%w: version %d, this cairn reads version %d", errBadSnapshot, h.Version, snapshotVersion)
	}
	return h, nil
}

// fsmSnapshot is a point-in-time view that Raft persists in the background.
type fsmSnapshot struct {
	header snapshotHeader
	mvcc   *mvcc.Snapshot
}

func (s *fsmSnapshot) writeTo(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := writeSnapshotHeader(bw, s.header); err != nil {
		return err
	}
	if _, err := s.mvcc.WriteTo(bw); err != nil {
		return err
	}
	return bw.Flush()
}

// Persist implements raft.FSMSnapshot.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.writeTo(sink); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot.
func (s *fsmSnapshot) Release() {}
