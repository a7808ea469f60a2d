package raftstore

import (
	"context"
	"io"
	"time"

	"github.com/hashicorp/raft"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// APIVersion is the etcd API version this store implements and reports.
const APIVersion = "3.6.0"

// maintenanceServer serves the etcd Maintenance API.
type maintenanceServer struct {
	pb.UnimplementedMaintenanceServer
	s *Server
}

func (m *maintenanceServer) Status(ctx context.Context, _ *pb.StatusRequest) (*pb.StatusResponse, error) {
	s := m.s
	_, leaderID := s.leader()
	size := s.dbSize()
	resp := &pb.StatusResponse{
		Version:          APIVersion,
		StorageVersion:   APIVersion,
		DbSize:           size,
		DbSizeInUse:      size,
		DbSizeQuota:      s.cfg.QuotaBytes,
		Leader:           parseMemberID(leaderID),
		RaftIndex:        s.raft.LastIndex(),
		RaftTerm:         s.raft.CurrentTerm(),
		RaftAppliedIndex: s.fsm.applied.Load(),
		IsLearner:        s.isLearner(),
	}
	if leaderID == "" {
		resp.Errors = append(resp.Errors, rpctypes.ErrGRPCNoLeader.Error())
	}
	for _, a := range s.fsm.alarmList() {
		resp.Errors = append(resp.Errors, "memberID:"+memberIDString(a.MemberID)+" alarm:"+a.Alarm.String())
	}
	s.fillHeader(&resp.Header)
	return resp, nil
}

// baseDBSize is the fixed part of the reported database size (headers and
// tables), so that even an empty store reports a non-zero size, as etcd's
// bbolt file does; tools divide by it.
const baseDBSize = 4096

func (s *Server) dbSize() int64 { return s.fsm.store.Size() + baseDBSize }

func (s *Server) isLearner() bool {
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, srv := range f.Configuration().Servers {
		if parseMemberID(srv.ID) == s.meta.MemberID {
			return srv.Suffrage == raft.Nonvoter
		}
	}
	return false
}

// Snapshot streams a consistent copy of the whole state followed by its
// SHA-256, as etcd does, so a saved file can be verified before restore.
func (m *maintenanceServer) Snapshot(_ *pb.SnapshotRequest, stream pb.Maintenance_SnapshotServer) error {
	s := m.s
	// Include every write acknowledged before the request, whichever
	// replica serves it.
	if err := s.linearizableRead(stream.Context()); err != nil {
		return toGRPC(err)
	}
	snap, err := s.fsm.Snapshot()
	if err != nil {
		return toGRPC(err)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(writeSnapshotFileBody(pw, snap.(*fsmSnapshot)))
	}()
	defer pr.Close()
	buf := make([]byte, 64*1024)
	var pending []byte
	for {
		n, err := io.ReadFull(pr, buf)
		if n > 0 {
			// Hold one chunk back so the last one can say RemainingBytes 0.
			if pending != nil {
				if err := m.sendChunk(stream, pending, 1); err != nil {
					return err
				}
			}
			pending = append([]byte(nil), buf[:n]...)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return status.Error(codes.Internal, err.Error())
		}
	}
	return m.sendChunk(stream, pending, 0)
}

func (m *maintenanceServer) sendChunk(stream pb.Maintenance_SnapshotServer, blob []byte, remaining uint64) error {
	resp := &pb.SnapshotResponse{Blob: blob, RemainingBytes: remaining, Version: APIVersion}
	m.s.fillHeader(&resp.Header)
	return stream.Send(resp)
}

func (m *maintenanceServer) HashKV(ctx context.Context, req *pb.HashKVRequest) (*pb.HashKVResponse, error) {
	hash, hashRev, compactRev, err := m.s.fsm.store.HashKV(req.Revision)
	if err != nil {
		return nil, toGRPC(err)
	}
	resp := &pb.HashKVResponse{Hash: hash, HashRevision: hashRev, CompactRevision: compactRev}
	m.s.fillHeader(&resp.Header)
	return resp, nil
}

func (m *maintenanceServer) Hash(ctx context.Context, _ *pb.HashRequest) (*pb.HashResponse, error) {
	hash, _, _, err := m.s.fsm.store.HashKV(0)
	if err != nil {
		return nil, toGRPC(err)
	}
	resp := &pb.HashResponse{Hash: hash}
	m.s.fillHeader(&resp.Header)
	return resp, nil
}

// Defragment is a no-op: the state lives in memory and in Raft snapshots,
// which are rewritten whole.
func (m *maintenanceServer) Defragment(ctx context.Context, _ *pb.DefragmentRequest) (*pb.DefragmentResponse, error) {
	resp := &pb.DefragmentResponse{}
	m.s.fillHeader(&resp.Header)
	return resp, nil
}

func (m *maintenanceServer) Alarm(ctx context.Context, req *pb.AlarmRequest) (*pb.AlarmResponse, error) {
	if req.Action == pb.AlarmRequest_GET {
		resp := &pb.AlarmResponse{}
		for _, a := range m.s.fsm.alarmList() {
			if req.Alarm == pb.AlarmType_NONE || req.Alarm == a.Alarm {
				if req.MemberID == 0 || req.MemberID == a.MemberID {
					resp.Alarms = append(resp.Alarms, a)
				}
			}
		}
		m.s.fillHeader(&resp.Header)
		return resp, nil
	}
	resp, err := m.s.propose(ctx, cmdAlarm, req)
	if err != nil {
		return nil, toGRPC(err)
	}
	out := resp.(*pb.AlarmResponse)
	m.s.fillHeader(&out.Header)
	return out, nil
}

func (m *maintenanceServer) MoveLeader(ctx context.Context, req *pb.MoveLeaderRequest) (*pb.MoveLeaderResponse, error) {
	return onLeader(m.s, ctx, req, pb.MaintenanceClient.MoveLeader, m.localMoveLeader)
}

// localMoveLeader runs on the leader.
func (m *maintenanceServer) localMoveLeader(ctx context.Context, req *pb.MoveLeaderRequest) (*pb.MoveLeaderResponse, error) {
	s := m.s
	target, err := s.findMember(req.TargetID)
	if err != nil {
		return nil, err
	}
	if target.IsLearner || req.TargetID == s.meta.MemberID {
		return nil, rpctypes.ErrGRPCBadLeaderTransferee
	}
	addr, _ := peerAddrFromURLs(target.PeerURLs)
	if err := s.raft.LeadershipTransferToServer(raft.ServerID(memberIDString(req.TargetID)), raft.ServerAddress(addr)).Error(); err != nil {
		return nil, toGRPC(err)
	}
	// Answer once the new leader is known, as etcd does.
	for ctx.Err() == nil {
		if _, id := s.leader(); parseMemberID(id) == req.TargetID {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.log.Info("leadership moved", "to", memberIDString(req.TargetID), "reason", "MoveLeader request")
	resp := &pb.MoveLeaderResponse{}
	s.fillHeader(&resp.Header)
	return resp, nil
}
