package main

import (
	"os"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/etcdctl/v3/ctlv3"
)

// newEtcdctlCmd embeds the official etcdctl, so operators have the
// standard etcd tool at hand without installing it.
func newEtcdctlCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "etcdctl [etcdctl flags and command]",
		Short:              "The embedded etcdctl (etcd's own client) for the store API",
		DisableFlagParsing: true,
		// etcdctl reads its own configuration (ETCDCTL_* variables).
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		Run: func(_ *cobra.Command, args []string) {
			os.Args = append([]string{"etcdctl"}, args...)
			ctlv3.MustStart()
		},
	}
}
