package raftstore

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"cairn/raftstore/mvcc"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A snapshot file is the state snapshot stream (header, then MVCC records),
// zero padding to a multiple of 512 bytes, and the SHA-256 of everything
// before it. The Maintenance Snapshot RPC streams exactly these bytes; the
// padding lets etcd's own `etcdctl snapshot save` accept them too.

// writeSnapshotFileBody writes the file form of snap to w.
func writeSnapshotFileBody(w io.Writer, snap *fsmSnapshot) error {
	h := sha256.New()
	cw := &countingWriter{w: io.MultiWriter(w, h)}
	if err := snap.writeTo(cw); err != nil {
		return err
	}
	if pad := (512 - cw.n%512) % 512; pad > 0 {
		if _, err := cw.Write(make([]byte, pad)); err != nil {
			return err
		}
	}
	_, err := w.Write(h.Sum(nil))
	return err
}

// SnapshotInfo describes a snapshot file.
type SnapshotInfo struct {
	Path            string
	Size            int64
	SHA256          string
	SourceClusterID uint64
	Revision        int64
	CompactRevision int64
	KeyCount        int64
	Hash            uint32 // HashKV at Revision, comparable with a live cluster's
	Members         []string
}

// ErrCorruptSnapshot is returned for a snapshot file that fails its
// checksum or cannot be decoded.
var ErrCorruptSnapshot = errors.New("raftstore: snapshot file is corrupt or truncated")

// SaveSnapshot streams a snapshot from a cluster into path. The file only
// appears under path once its checksum has been verified.
func SaveSnapshot(ctx context.Context, cli *clientv3.Client, path string, progress func(bytes int64)) (SnapshotInfo, error) {
	rc, err := cli.Snapshot(ctx)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("raftstore: requesting snapshot: %w", err)
	}
	defer rc.Close()
	tmp := path + ".part"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return SnapshotInfo{}, err
	}
	defer os.Remove(tmp)
	w := &countingWriter{w: f, progress: progress}
	if _, err := io.Copy(w, rc); err != nil {
		f.Close()
		return SnapshotInfo{}, fmt.Errorf("raftstore: receiving snapshot: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return SnapshotInfo{}, err
	}
	if err := f.Close(); err != nil {
		return SnapshotInfo{}, err
	}
	info, err := ReadSnapshotInfo(tmp)
	if err != nil {
		return SnapshotInfo{}, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return SnapshotInfo{}, err
	}
	info.Path = path
	return info, nil
}

type countingWriter struct {
	w        io.Writer
	n        int64
	progress func(int64)
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if c.progress != nil {
		c.progress(c.n)
	}
	return n, err
}

// openSnapshotFile verifies a snapshot file's checksum and returns a reader
// over its state stream.
func openSnapshotFile(path string) (*bufio.Reader, *os.File, int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, 0, "", err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, 0, "", err
	}
	size := st.Size()
	if size < sha256.Size+int64(len(snapshotMagic)) {
		f.Close()
		return nil, nil, 0, "", fmt.Errorf("%w: %s is only %d bytes", ErrCorruptSnapshot, path, size)
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, size-sha256.Size)); err != nil {
		f.Close()
		return nil, nil, 0, "", err
	}
	want := make([]byte, sha256.Size)
	if _, err := f.ReadAt(want, size-sha256.Size); err != nil {
		f.Close()
		return nil, nil, 0, "", err
	}
	got := h.Sum(nil)
	if !bytes.Equal(got, want) {
		f.Close()
		return nil, nil, 0, "", fmt.Errorf("%w: %s fails its SHA-256 check (the file was cut short or changed); take a new snapshot with `cairn snapshot save`", ErrCorruptSnapshot, path)
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, size-sha256.Size), 1<<20)
	return br, f, size, hex.EncodeToString(got), nil
}

// ReadSnapshotInfo verifies a snapshot file and describes its contents.
func ReadSnapshotInfo(path string) (SnapshotInfo, error) {
	br, f, size, sum, err := openSnapshotFile(path)
	if err != nil {
		return SnapshotInfo{}, err
	}
	defer f.Close()
	h, err := readSnapshotHeader(br)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("%w: %v", ErrCorruptSnapshot, err)
	}
	st := mvcc.New()
	if err := st.Restore(br); err != nil {
		return SnapshotInfo{}, fmt.Errorf("%w: %v", ErrCorruptSnapshot, err)
	}
	hash, rev, compact, err := st.HashKV(0)
	if err != nil {
		return SnapshotInfo{}, err
	}
	info := SnapshotInfo{Path: path, Size: size, SHA256: sum, SourceClusterID: h.ClusterID, Revision: rev,
		CompactRevision: compact, KeyCount: st.KeyCount(), Hash: hash}
	for _, m := range h.Members {
		info.Members = append(info.Members, m.Name)
	}
	return info, nil
}

// RestoreConfig describes the new cluster a snapshot is restored into.
type RestoreConfig struct {
	SnapshotPath        string
	DataDir             string
	Name                string
	InitialCluster      []Peer
	InitialClusterToken string
	LogStore            string
	CAFingerprint       string
}

// RestoreSnapshot prepares a data dir for one member of a new cluster that
// starts from the snapshot's state. Run it for every member with the same
// file and --initial-cluster, then start each member with those flags.
func RestoreSnapshot(cfg RestoreConfig) error {
	if _, ok, _ := readMeta(cfg.DataDir); ok || dataDirInUse(cfg.DataDir) {
		return fmt.Errorf("raftstore: data dir %s already holds data; restore into a new, empty --data-dir", cfg.DataDir)
	}
	var self *Peer
	for i := range cfg.InitialCluster {
		if cfg.InitialCluster[i].Name == cfg.Name {
			self = &cfg.InitialCluster[i]
		}
	}
	if self == nil {
		return fmt.Errorf("raftstore: --name %q is not in --initial-cluster", cfg.Name)
	}
	// Verify and decode the whole file before writing anything.
	if _, err := ReadSnapshotInfo(cfg.SnapshotPath); err != nil {
		return err
	}
	br, f, _, _, err := openSnapshotFile(cfg.SnapshotPath)
	if err != nil {
		return err
	}
	defer f.Close()

	clusterID := clusterIDFor(cfg.InitialCluster, cfg.InitialClusterToken)
	meta := memberMeta{Name: cfg.Name, ClusterID: clusterID, MemberID: memberIDFor(self.Address, clusterID), Origin: originRestore, CAFingerprint: cfg.CAFingerprint}
	raftDir := filepath.Join(cfg.DataDir, "raft")
	if err := os.MkdirAll(raftDir, 0o700); err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(cfg.DataDir)
		}
	}()
	snaps, err := raft.NewFileSnapshotStore(raftDir, 2, io.Discard)
	if err != nil {
		return err
	}
	var servers []raft.Server
	peers := append([]Peer(nil), cfg.InitialCluster...)
	sort.Slice(peers, func(i, j int) bool { return peers[i].Name < peers[j].Name })
	for _, p := range peers {
		servers = append(servers, raft.Server{ID: raft.ServerID(memberIDString(memberIDFor(p.Address, clusterID))), Address: raft.ServerAddress(p.Address), Suffrage: raft.Voter})
	}
	conf := raft.Configuration{Servers: servers}
	// The snapshot becomes index 1 of the new cluster's log: every member
	// starts from identical state and configuration.
	// Create encodes legacy peer data through a transport; an in-memory one
	// encodes addresses exactly as the network transport does.
	_, trans := raft.NewInmemTransport("")
	sink, err := snaps.Create(raft.SnapshotVersionMax, 1, 1, conf, 1, trans)
	if err != nil {
		return err
	}
	h, err := readSnapshotHeader(br)
	if err != nil {
		sink.Cancel()
		return fmt.Errorf("%w: %v", ErrCorruptSnapshot, err)
	}
	h.ClusterID = clusterID
	h.Applied = 1
	h.Members = nil // the new members publish their own names and URLs
	h.Alarms = nil
	if err := writeSnapshotHeader(sink, h); err != nil {
		sink.Cancel()
		return err
	}
	if _, err := io.Copy(sink, br); err != nil {
		sink.Cancel()
		return err
	}
	if err := sink.Close(); err != nil {
		return err
	}
	// Raft needs a current term at least that of the snapshot.
	if err := initStableTerm(raftDir, cfg.LogStore); err != nil {
		return err
	}
	if err := writeMeta(cfg.DataDir, meta); err != nil {
		return err
	}
	ok = true
	return nil
}

func initStableTerm(raftDir, logStore string) error {
	switch logStore {
	case "wal":
		w, err := openWAL(raftDir)
		if err != nil {
			return err
		}
		defer w.Close()
		return w.SetUint64([]byte("CurrentTerm"), 1)
	default:
		b, err := raftboltdb.NewBoltStore(filepath.Join(raftDir, "raft.db"))
		if err != nil {
			return err
		}
		defer b.Close()
		return b.SetUint64([]byte("CurrentTerm"), 1)
	}
}

// writeSnapshotFile writes the current state to path atomically.
func (s *Server) writeSnapshotFile(path string) error {
	snap, err := s.fsm.Snapshot()
	if err != nil {
		return err
	}
	tmp := path + ".part"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := writeSnapshotFileBody(f, snap.(*fsmSnapshot)); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// scheduledSnapshots writes DATA/snapshots/snapshot-<time>-rev<N>.snap
// every interval and keeps the newest files up to the retention.
func (s *Server) scheduledSnapshots() {
	dir := filepath.Join(s.cfg.DataDir, "snapshots")
	t := time.NewTicker(s.cfg.ScheduledSnapshotInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			s.log.Warn("scheduled snapshot failed", "err", err)
			continue
		}
		name := fmt.Sprintf("snapshot-%s-rev%d.snap", time.Now().UTC().Format("20060102T150405.000Z"), s.fsm.store.Rev())
		path := filepath.Join(dir, name)
		if err := s.writeSnapshotFile(path); err != nil {
			s.log.Warn("scheduled snapshot failed", "err", err)
			continue
		}
		s.log.Info("scheduled snapshot written", "path", path)
		pruneSnapshots(dir, s.cfg.ScheduledSnapshotRetention)
	}
}

func pruneSnapshots(dir string, keep int) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "snapshot-") && strings.HasSuffix(e.Name(), ".snap") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for len(names) > keep {
		os.Remove(filepath.Join(dir, names[0]))
		names = names[1:]
	}
}
