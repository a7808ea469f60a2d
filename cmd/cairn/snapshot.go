package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strings"
	"time"

	"cairn/internal/pki"
	"cairn/raftstore"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func newSnapshotCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Save, inspect and restore snapshots of the store",
	}
	cmd.AddCommand(newSnapshotSaveCmd(), newSnapshotStatusCmd(), newSnapshotRestoreCmd())
	return cmd
}

// addClientFlags adds the flags every store client command shares.
func addClientFlags(cmd *cobra.Command) { addStoreFlags(cmd.Flags(), "") }

// addStoreFlags adds store client flags whose names start with prefix.
func addStoreFlags(f *pflag.FlagSet, prefix string) {
	f.StringSlice(prefix+"endpoints", []string{"https://127.0.0.1:2379"}, "store endpoints (comma separated)")
	f.String(prefix+"cacert", "", "CA certificate file (e.g. PKI/ca.crt)")
	f.String(prefix+"cert", "", "client certificate file (e.g. PKI/admin.crt)")
	f.String(prefix+"key", "", "client key file (e.g. PKI/admin.key)")
	f.Bool(prefix+"insecure", false, "plain connections without TLS (servers started with --insecure)")
	f.Duration(prefix+"dial-timeout", 5*time.Second, "time to wait for a connection")
}

// newStoreClient connects to the store endpoints given by addClientFlags.
func newStoreClient(cmd *cobra.Command) (*clientv3.Client, error) {
	return newStoreClientFlags(cmd, "")
}

// newStoreClientFlags connects with the flags added by addStoreFlags.
func newStoreClientFlags(cmd *cobra.Command, prefix string) (*clientv3.Client, error) {
	f := cmd.Flags()
	endpoints, _ := f.GetStringSlice(prefix + "endpoints")
	insecure, _ := f.GetBool(prefix + "insecure")
	dialTimeout, _ := f.GetDuration(prefix + "dial-timeout")
	var tlsCfg *tls.Config
	if !insecure {
		cacert, _ := f.GetString(prefix + "cacert")
		cert, _ := f.GetString(prefix + "cert")
		key, _ := f.GetString(prefix + "key")
		if cacert == "" || cert == "" || key == "" {
			return nil, fmt.Errorf("--%scacert, --%scert and --%skey are required (e.g. PKI/ca.crt, PKI/admin.crt, PKI/admin.key), or pass --%sinsecure", prefix, prefix, prefix, prefix)
		}
		var err error
		if tlsCfg, err = pki.ClientConfig(cacert, cert, key); err != nil {
			return nil, err
		}
	} else {
		for i, e := range endpoints {
			endpoints[i] = strings.Replace(e, "https://", "http://", 1)
		}
	}
	return clientv3.New(clientv3.Config{Endpoints: endpoints, TLS: tlsCfg, DialTimeout: dialTimeout, Logger: zap.NewNop()})
}

func newSnapshotSaveCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "save FILE",
		Short: "Stream a consistent snapshot of the store into FILE (verified by its SHA-256)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cli, err := newStoreClient(cmd)
			if err != nil {
				return err
			}
			defer cli.Close()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			// The deadline covers the wait for the first bytes only: a server
			// without a quorum never starts the stream, while a large store
			// may take longer than any fixed deadline to transfer.
			timeout, _ := cmd.Flags().GetDuration("command-timeout")
			ctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			if timeout <= 0 {
				timeout = time.Duration(math.MaxInt64)
			}
			noStart := time.AfterFunc(timeout, func() { cancel(errSnapshotNoStart) })
			defer noStart.Stop()
			last := time.Now()
			info, err := raftstore.SaveSnapshot(ctx, cli, args[0], func(n int64) {
				noStart.Stop()
				if time.Since(last) > time.Second {
					last = time.Now()
					fmt.Fprintf(cmd.ErrOrStderr(), "received %d bytes\n", n)
				}
			})
			if errors.Is(context.Cause(ctx), errSnapshotNoStart) {
				return fmt.Errorf("snapshot: no data from %s within --command-timeout %s: the cluster most likely has no quorum (check \"cairn etcdctl endpoint health\"); if two of three servers are gone for good, see docs/runbooks/quorum-loss.md", strings.Join(cli.Endpoints(), ","), timeout)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Snapshot saved to %s (revision %d, %d keys, %d bytes, sha256 %s)\n",
				info.Path, info.Revision, info.KeyCount, info.Size, info.SHA256)
			return nil
		},
	}
	addClientFlags(cmd)
	cmd.Flags().Duration("command-timeout", 30*time.Second, "how long to wait for the cluster to start sending the snapshot, which it cannot without a quorum (0: no limit)")
	return cmd
}

// errSnapshotNoStart is the cause of a snapshot save given up because no
// data arrived within --command-timeout.
var errSnapshotNoStart = errors.New("snapshot: no data within the command timeout")

func newSnapshotStatusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status FILE",
		Short: "Verify a snapshot file and print its revision, key count, size, hash and source cluster",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			info, err := raftstore.ReadSnapshotInfo(args[0])
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "file:             %s\n", info.Path)
			fmt.Fprintf(w, "size:             %d bytes\n", info.Size)
			fmt.Fprintf(w, "sha256:           %s\n", info.SHA256)
			fmt.Fprintf(w, "source cluster:   %016x\n", info.SourceClusterID)
			fmt.Fprintf(w, "source members:   %s\n", strings.Join(info.Members, ","))
			fmt.Fprintf(w, "revision:         %d\n", info.Revision)
			fmt.Fprintf(w, "compact revision: %d\n", info.CompactRevision)
			fmt.Fprintf(w, "keys:             %d\n", info.KeyCount)
			fmt.Fprintf(w, "hash (HashKV):    %d\n", info.Hash)
			return nil
		},
	}
	return cmd
}

func newSnapshotRestoreCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "restore FILE",
		Short: "Prepare a data dir for one member of a new cluster that starts from FILE",
		Long: `Prepare a data dir for one member of a new cluster that starts from a snapshot.
Run it once per member with the same FILE, --initial-cluster and
--initial-cluster-token, then start each member with those flags and its
--data-dir. The new cluster holds every key at the snapshot's revision.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			str := func(n string) string { v, _ := f.GetString(n); return v }
			cfg := raftstore.RestoreConfig{
				SnapshotPath:        args[0],
				DataDir:             str("data-dir"),
				Name:                str("name"),
				InitialClusterToken: str("initial-cluster-token"),
				LogStore:            str("raft-log-store"),
			}
			if cfg.DataDir == "" || cfg.Name == "" || str("initial-cluster") == "" {
				return errors.New("--data-dir, --name and --initial-cluster are required")
			}
			var err error
			if cfg.InitialCluster, err = raftstore.ParseInitialCluster(str("initial-cluster")); err != nil {
				return err
			}
			if dir := str("pki-dir"); dir != "" {
				if _, cfg.CAFingerprint, err = caFingerprint(dir); err != nil {
					return err
				}
			}
			if err := raftstore.RestoreSnapshot(cfg); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Restored %s into %s for member %s.\nStart it with: cairn server --name %s --data-dir %s --initial-cluster %s --initial-cluster-token %s ...\n",
				args[0], cfg.DataDir, cfg.Name, cfg.Name, cfg.DataDir, str("initial-cluster"), cfg.InitialClusterToken)
			return nil
		},
	}
	f := cmd.Flags()
	f.String("data-dir", "", "new data directory for this member (must not exist or be empty)")
	f.String("name", "", "this member's name")
	f.String("initial-cluster", "", "the new cluster's members: name=host:port of each peer address")
	f.String("initial-cluster-token", "cairn", "the new cluster's token")
	f.String("pki-dir", "", "the new cluster's PKI dir, so the data dir is tied to its CA")
	f.String("raft-log-store", "boltdb", "Raft log store the server will use: boltdb or wal")
	return cmd
}

// caFingerprint loads a CA and returns it with its SHA-256 fingerprint.
func caFingerprint(dir string) (*pki.CA, string, error) {
	ca, err := pki.LoadCA(dir)
	if err != nil {
		return nil, "", err
	}
	return ca, ca.Fingerprint(), nil
}
