package raftstore

import (
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
)

// commandType is the first byte of every Raft log entry the FSM applies; the
// rest of the entry is the protobuf message the type names.
type commandType byte

// The values are part of the on-disk log format: never renumber them.
const (
	cmdPut          commandType = 1 // pb.PutRequest
	cmdDeleteRange  commandType = 2 // pb.DeleteRangeRequest
	cmdTxn          commandType = 3 // pb.TxnRequest
	cmdCompact      commandType = 4 // pb.CompactionRequest
	cmdLeaseGrant   commandType = 5 // pb.LeaseGrantRequest
	cmdLeaseRevoke  commandType = 6 // pb.LeaseRevokeRequest
	cmdMemberAttrs  commandType = 7 // pb.Member: name and client URLs a member publishes
	cmdMemberForget commandType = 8 // pb.MemberRemoveRequest: drop a removed member's attributes
	cmdAlarm        commandType = 9 // pb.AlarmRequest
	// cmdLeaderBarrier is applied by every new leader before it serves
	// linearizable reads. Raft's own no-op and barrier entries never reach
	// the FSM, so without it a read index could point at an entry the FSM
	// will never report as applied. It also bumps the leadership epoch.
	cmdLeaderBarrier commandType = 10 // pb.RequestHeader{ID: leader member ID}
)

var commandNames = map[commandType]string{
	cmdPut:           "put",
	cmdDeleteRange:   "delete_range",
	cmdTxn:           "txn",
	cmdCompact:       "compact",
	cmdLeaseGrant:    "lease_grant",
	cmdLeaseRevoke:   "lease_revoke",
	cmdMemberAttrs:   "member_attrs",
	cmdMemberForget:  "member_forget",
	cmdAlarm:         "alarm",
	cmdLeaderBarrier: "leader_barrier",
}

func (t commandType) String() string {
	if n, ok := commandNames[t]; ok {
		return n
	}
	return fmt.Sprintf("unknown(%d)", byte(t))
}

// encodeCommand frames msg as a Raft log entry of type t.
func encodeCommand(t commandType, msg proto.Message) ([]byte, error) {
	size := proto.Size(msg)
	buf := make([]byte, 1, 1+size)
	buf[0] = byte(t)
	return proto.MarshalOptions{Deterministic: true}.MarshalAppend(buf, msg)
}

// commandMessage returns an empty message of the type a command carries.
func commandMessage(t commandType) proto.Message {
	switch t {
	case cmdPut:
		return &pb.PutRequest{}
	case cmdDeleteRange:
		return &pb.DeleteRangeRequest{}
	case cmdTxn:
		return &pb.TxnRequest{}
	case cmdCompact:
		return &pb.CompactionRequest{}
	case cmdLeaseGrant:
		return &pb.LeaseGrantRequest{}
	case cmdLeaseRevoke:
		return &pb.LeaseRevokeRequest{}
	case cmdMemberAttrs:
		return &pb.Member{}
	case cmdMemberForget:
		return &pb.MemberRemoveRequest{}
	case cmdAlarm:
		return &pb.AlarmRequest{}
	case cmdLeaderBarrier:
		return &pb.RequestHeader{}
	}
	return nil
}

// responseMessage returns an empty message of the type a command's
// successful apply returns; it is used to decode forwarded results.
func responseMessage(t commandType) proto.Message {
	switch t {
	case cmdPut:
		return &pb.PutResponse{}
	case cmdDeleteRange:
		return &pb.DeleteRangeResponse{}
	case cmdTxn:
		return &pb.TxnResponse{}
	case cmdCompact:
		return &pb.CompactionResponse{}
	case cmdLeaseGrant:
		return &pb.LeaseGrantResponse{}
	case cmdLeaseRevoke:
		return &pb.LeaseRevokeResponse{}
	case cmdMemberAttrs, cmdMemberForget:
		return &pb.Member{}
	case cmdAlarm:
		return &pb.AlarmResponse{}
	case cmdLeaderBarrier:
		return &pb.ResponseHeader{}
	}
	return nil
}
