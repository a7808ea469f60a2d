package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"cairn/internal/bootstrap"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func newTokenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and delete join tokens",
		Long: `Join tokens let new machines join the cluster without copying its CA:

  cairn agent  --server https://s1:6443 --token K10...
  cairn server --join   https://s1:6443 --token K10...   (needs a --server token)

A token reads K10<sha256 of the cluster CA>::<id>.<secret>. It is stored as the
Secret kube-system/bootstrap-token-<id> (type bootstrap.kubernetes.io/token,
as kubeadm's). Every server also keeps the cluster's default server token,
which never expires, in DATA/token. The commands talk to the API as the
admin: --kubeconfig, default ~/.cairn/admin.kubeconfig.`,
	}
	cmd.PersistentFlags().String("kubeconfig", defaultKubeconfig(), "admin kubeconfig of the cluster")
	cmd.AddCommand(newTokenCreateCmd(), newTokenListCmd(), newTokenDeleteCmd())
	return cmd
}

func newTokenCreateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a join token and print it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := cmd.Flags()
			ttl, _ := f.GetDuration("ttl")
			desc, _ := f.GetString("description")
			server, _ := f.GetBool("server")
			if ttl < 0 {
				return fmt.Errorf("--ttl %s: must not be negative (0: never expires)", ttl)
			}
			cs, caHash, err := tokenClient(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
			defer cancel()
			tok, err := bootstrap.CreateToken(ctx, cs, caHash, bootstrap.TokenOptions{TTL: ttl, Description: desc, Server: server})
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok.String())
			return nil
		},
	}
	f := cmd.Flags()
	f.Duration("ttl", 24*time.Hour, "how long the token is valid (0: never expires)")
	f.String("description", "", "what the token is for, shown by \"cairn token list\"")
	f.Bool("server", false, "let the token join servers too (it then hands out the CA key); without it, agents only")
	return cmd
}

func newTokenListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the join tokens (without their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cs, _, err := tokenClient(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
			defer cancel()
			tokens, err := bootstrap.ListTokens(ctx, cs)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 3, ' ', 0)
			fmt.Fprintln(w, "ID\tTTL\tEXPIRES\tJOINS\tDESCRIPTION")
			now := time.Now()
			for _, t := range tokens {
				ttl, expires := "<forever>", "<never>"
				if !t.Expires.IsZero() {
					expires = t.Expires.UTC().Format(time.RFC3339)
					ttl = "<expired>"
					if left := t.Expires.Sub(now); left > 0 {
						ttl = left.Round(time.Second).String()
					}
				}
				joins := "agents"
				if t.Server() {
					joins = "servers,agents"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", t.ID, ttl, expires, joins, t.Description)
			}
			return w.Flush()
		},
	}
}

func newTokenDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID...",
		Short: "Delete join tokens: no machine can join with them afterwards",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cs, _, err := tokenClient(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
			defer cancel()
			for _, id := range args {
				if err := bootstrap.DeleteToken(ctx, cs, id); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "token %s deleted\n", bootstrap.TokenIDOf(id))
			}
			return nil
		},
	}
}

// commandTimeout bounds the API calls of a short command.
const commandTimeout = 30 * time.Second

// tokenClient returns an API client from --kubeconfig and the hash of the
// cluster CA it trusts, which new tokens pin.
func tokenClient(cmd *cobra.Command) (kubernetes.Interface, string, error) {
	rc, err := adminRESTConfig(cmd)
	if err != nil {
		return nil, "", err
	}
	caHash, err := kubeconfigCAHash(rc)
	if err != nil {
		return nil, "", err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, "", err
	}
	return cs, caHash, nil
}

// adminRESTConfig loads --kubeconfig.
func adminRESTConfig(cmd *cobra.Command) (*rest.Config, error) {
	path, _ := cmd.Flags().GetString("kubeconfig")
	if path == "" {
		return nil, errors.New("--kubeconfig is required (a server writes DATA/admin.kubeconfig)")
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w (a server writes DATA/admin.kubeconfig; or pass --write-kubeconfig to it)", path, err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	return rc, nil
}

// kubeconfigCAHash is the hash of the CA a kubeconfig trusts: the
// cluster CA.
func kubeconfigCAHash(rc *rest.Config) (string, error) {
	data := rc.TLSClientConfig.CAData
	if len(data) == 0 && rc.TLSClientConfig.CAFile != "" {
		var err error
		if data, err = os.ReadFile(rc.TLSClientConfig.CAFile); err != nil {
			return "", fmt.Errorf("the kubeconfig's CA: %w", err)
		}
	}
	block, _ := pem.Decode(data)
	if block == nil || !strings.Contains(block.Type, "CERTIFICATE") {
		return "", errors.New("the kubeconfig names no cluster CA (certificate-authority-data): tokens pin the CA, so use the admin kubeconfig a server wrote")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", fmt.Errorf("the kubeconfig's CA: %w", err)
	}
	return bootstrap.CAHash(cert), nil
}
