package raftstore

import (
	"io"
	"log/slog"
	"testing"

	"github.com/hashicorp/raft"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
)

func mustCommand(t *testing.T, ct commandType, msg proto.Message) []byte {
	t.Helper()
	b, err := encodeCommand(ct, msg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testFSM() *fsm { return newFSM(1, slog.New(slog.NewTextHandler(io.Discard, nil))) }

func TestFSMApplyIsDeterministic(t *testing.T) {
	var logs []*raft.Log
	add := func(ct commandType, msg proto.Message) {
		logs = append(logs, &raft.Log{Index: uint64(len(logs) + 1), Type: raft.LogCommand, Data: mustCommand(t, ct, msg)})
	}
	add(cmdLeaseGrant, &pb.LeaseGrantRequest{ID: 7, TTL: 10})
	add(cmdPut, &pb.PutRequest{Key: []byte("a"), Value: []byte("1"), Lease: 7})
	add(cmdPut, &pb.PutRequest{Key: []byte("b"), Value: []byte("2")})
	add(cmdTxn, &pb.TxnRequest{
		Compare: []*pb.Compare{{Key: []byte("a"), Target: pb.Compare_VALUE, Result: pb.Compare_EQUAL, TargetUnion: &pb.Compare_Value{Value: []byte("1")}}},
		Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("c"), Value: []byte("3")}}}},
	})
	add(cmdPut, &pb.PutRequest{Key: []byte("x"), Lease: 99}) // fails: unknown lease, on every replica alike
	add(cmdLeaseRevoke, &pb.LeaseRevokeRequest{ID: 7})
	add(cmdCompact, &pb.CompactionRequest{Revision: 3})
	add(cmdMemberAttrs, &pb.Member{ID: 5, Name: "s5", ClientURLs: []string{"https://x:2379"}})
	add(cmdAlarm, &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: 5, Alarm: pb.AlarmType_NOSPACE})
	add(cmdPut, &pb.PutRequest{Key: []byte("refused"), Value: []byte("no space")})
	add(cmdLeaderBarrier, &pb.RequestHeader{ID: 5})

	a, b := testFSM(), testFSM()
	ra := a.ApplyBatch(logs)
	// The second replica applies the same log one entry at a time.
	var rb []interface{}
	for _, l := range logs {
		rb = append(rb, b.Apply(l))
	}
	for i := range ra {
		ea, eb := ra[i].(*applyResult).err, rb[i].(*applyResult).err
		if (ea == nil) != (eb == nil) || (ea != nil && ea.Error() != eb.Error()) {
			t.Fatalf("entry %d: results differ: %v vs %v", i+1, ea, eb)
		}
	}
	if ra[4].(*applyResult).err == nil {
		t.Fatal("put with an unknown lease succeeded")
	}
	if err := ra[9].(*applyResult).err; err != ErrNoSpace {
		t.Fatalf("put under NOSPACE: %v", err)
	}
	ha, _, _, _ := a.store.HashKV(0)
	hb, _, _, _ := b.store.HashKV(0)
	if ha != hb || a.applied.Load() != uint64(len(logs)) || a.epoch != 1 {
		t.Fatalf("replicas diverged: hash %d vs %d, applied %d, epoch %d", ha, hb, a.applied.Load(), a.epoch)
	}

	// A snapshot restores into an identical state, tables included.
	snap, _ := a.Snapshot()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(snap.(*fsmSnapshot).writeTo(pw)) }()
	c := testFSM()
	if err := c.Restore(pr); err != nil {
		t.Fatal(err)
	}
	hc, _, _, _ := c.store.HashKV(0)
	if hc != ha || !c.noSpace() || c.epoch != 1 {
		t.Fatalf("restored state differs: hash %d, nospace %v, epoch %d", hc, c.noSpace(), c.epoch)
	}
	if m, ok := c.memberAttrs(5); !ok || m.Name != "s5" {
		t.Fatalf("member attributes lost in snapshot: %v", m)
	}
}

func TestFSMPanicsOnUnknownCommand(t *testing.T) {
	for name, data := range map[string][]byte{
		"unknown type": {0xee, 1, 2},
		"bad payload":  {byte(cmdPut), 0xff, 0xff, 0xff},
		"empty":        {},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("applying an undecodable entry did not panic: replicas could diverge silently")
				}
			}()
			testFSM().Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: data})
		})
	}
}
