package main

import (
	"errors"
	"fmt"

	"cairn/internal/kubeconfig"
	"cairn/internal/pki"

	"github.com/spf13/cobra"
)

func newKubeconfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print a kubeconfig with a fresh client certificate from the cluster CA",
		Long: `Print a kubeconfig for a user, with a new client certificate signed by the
cluster CA: its CN is the user and its O entries the groups.

  cairn kubeconfig --pki-dir PKI --user jane --groups dev,ops > jane.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := cmd.Flags()
			dir, _ := f.GetString("pki-dir")
			user, _ := f.GetString("user")
			groups, _ := f.GetStringSlice("groups")
			servers, _ := f.GetStringSlice("server")
			out, _ := f.GetString("output")
			if dir == "" {
				return errors.New("--pki-dir is required (the directory from `cairn pki init`)")
			}
			ca, err := pki.LoadCA(dir)
			if err != nil {
				return err
			}
			b, err := kubeconfig.Build(ca, kubeconfig.Options{Servers: servers, User: user, Groups: groups})
			if err != nil {
				return err
			}
			if out == "" {
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			if err := kubeconfig.WriteFile(out, b); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s for user %s\n", out, user)
			return nil
		},
	}
	f := cmd.Flags()
	f.String("pki-dir", "", "directory with the cluster CA (required)")
	f.String("user", "", "user name, the certificate's CN (required)")
	f.StringSlice("groups", nil, "groups, the certificate's O entries (comma separated)")
	f.StringSlice("server", []string{"https://127.0.0.1:6443"}, "API server URL")
	f.StringP("output", "o", "", "write to this file (mode 0600) instead of standard output")
	return cmd
}
