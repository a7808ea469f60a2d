package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"cairn/internal/pki"

	"github.com/spf13/cobra"
)

// newPKICmd groups the commands that manage a cluster's certificates.
func newPKICmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pki",
		Short: "Manage the cluster certificate authority",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newPKIInitCmd())
	return cmd
}

func newPKIInitCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create a new cluster CA and an admin client certificate",
		Long: `Create a new cluster certificate authority and an admin client certificate
in --dir. Every server of the cluster is started with a copy of this dir and
mints its own serving and peer certificates from the CA; tools authenticate
with the admin certificate. An existing CA is never overwritten.`,
		Example: `  cairn pki init --dir /etc/cairn/pki`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Checked here rather than with MarkFlagRequired so that
			// CAIRN_DIR and the config file can supply it too.
			if dir == "" {
				return errors.New("pki init: --dir is required")
			}
			if err := pki.Init(dir); err != nil {
				return err
			}
			path := func(name string) string { return filepath.Join(dir, name) }
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Wrote a new cluster CA to %s:\n", dir)
			fmt.Fprintf(out, "  %-30s CA certificate: every server and client trusts it\n", path(pki.CACertFile))
			fmt.Fprintf(out, "  %-30s CA key: keep it secret; each server needs it to mint its certificates\n", path(pki.CAKeyFile))
			fmt.Fprintf(out, "  %-30s admin client certificate (CN=%s, O=%s)\n", path(pki.AdminCertFile), pki.AdminCommonName, pki.AdminOrganization)
			fmt.Fprintf(out, "  %-30s admin client key\n", path(pki.AdminKeyFile))
			fmt.Fprintf(out, "\nNext, copy %s to every server and start each one with it:\n", dir)
			fmt.Fprintf(out, "  cairn server --pki-dir %s ...\n", dir)
			fmt.Fprintf(out, "Tools authenticate as the admin with:\n")
			fmt.Fprintf(out, "  --cacert %s --cert %s --key %s\n", path(pki.CACertFile), path(pki.AdminCertFile), path(pki.AdminKeyFile))
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory to write the CA and admin certificate to (required; must not hold a CA yet)")
	return cmd
}
