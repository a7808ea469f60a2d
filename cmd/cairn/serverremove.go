package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"cairn/internal/bootstrap"

	"github.com/spf13/cobra"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/client-go/rest"
)

func newServerRemoveCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a server from the store cluster by name",
		Long: `Remove the store member NAME from the cluster (the etcd MemberRemove). The
removed server stops by itself; wipe its data dir before using the machine
again. The removal is refused when it would cost the cluster its quorum (fewer
remaining members answer than a majority of them), and in a 2-member cluster,
unless --force.

The command finds the store through the API with the admin kubeconfig
(--kubeconfig, default ~/.cairn/admin.kubeconfig), or talks to the store
directly with --endpoints, --cacert, --cert and --key.`,
		Args: cobra.ExactArgs(1),
		RunE: runServerRemove,
	}
	f := cmd.Flags()
	f.String("kubeconfig", defaultKubeconfig(), "admin kubeconfig; its client certificate also authenticates to the store")
	f.Bool("force", false, "remove even when the cluster would be left without fault tolerance or quorum")
	addStoreFlags(f, "")
	return cmd
}

func runServerRemove(cmd *cobra.Command, args []string) error {
	name := args[0]
	force, _ := cmd.Flags().GetBool("force")
	cli, err := removeClient(cmd)
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	list, err := cli.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("listing the store members: %w", err)
	}
	var target *pb.Member
	var names []string
	for _, m := range list.Members {
		names = append(names, m.Name)
		if m.Name == name {
			target = m
		}
	}
	if target == nil {
		sort.Strings(names)
		return fmt.Errorf("no store member is named %q (members: %s)", name, strings.Join(names, ", "))
	}
	if !target.IsLearner {
		if err := checkRemovalQuorum(ctx, cli, list.Members, target, force); err != nil {
			return err
		}
	}
	resp, err := cli.MemberRemove(ctx, target.ID)
	if err != nil {
		return fmt.Errorf("removing %s: %w", name, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "removed server %s (member %x); %d members remain. It stops by itself: wipe its data dir before reusing the machine.\n",
		name, target.ID, len(resp.Members))
	return nil
}

// checkRemovalQuorum refuses a removal that would leave the cluster
// unable to commit, or, without force, without fault tolerance.
func checkRemovalQuorum(ctx context.Context, cli *clientv3.Client, members []*pb.Member, target *pb.Member, force bool) error {
	var remaining []*pb.Member
	for _, m := range members {
		if !m.IsLearner && m.ID != target.ID {
			remaining = append(remaining, m)
		}
	}
	if len(remaining) == 0 {
		return fmt.Errorf("%s is the last voting member: removing it would end the cluster", target.Name)
	}
	if force {
		return nil
	}
	if len(remaining) == 1 {
		return fmt.Errorf("removing %s would leave a one-member cluster: if %s then fails, or is the member that is down, the cluster stops. Add a server first, or pass --force", target.Name, remaining[0].Name)
	}
	healthy := 0
	var down []string
	for _, m := range remaining {
		if memberAnswers(ctx, cli, m) {
			healthy++
		} else {
			down = append(down, m.Name)
		}
	}
	if need := len(remaining)/2 + 1; healthy < need {
		return fmt.Errorf("removing %s would lose quorum: only %d of the %d remaining members answer (down: %s), a majority needs %d. Bring them back first, or pass --force",
			target.Name, healthy, len(remaining), strings.Join(down, ", "), need)
	}
	return nil
}

// memberAnswers reports whether m's store answers and knows a leader.
func memberAnswers(ctx context.Context, cli *clientv3.Client, m *pb.Member) bool {
	for _, u := range m.ClientURLs {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := cli.Status(sctx, u)
		cancel()
		if err == nil && st.Leader != 0 {
			return true
		}
	}
	return false
}

// removeClient connects to the store: with the store flags when --cacert
// is given, else through the admin kubeconfig, asking the API for the
// store members' URLs.
func removeClient(cmd *cobra.Command) (*clientv3.Client, error) {
	f := cmd.Flags()
	if cacert, _ := f.GetString("cacert"); cacert != "" || f.Changed("endpoints") {
		return newStoreClient(cmd)
	}
	rc, err := adminRESTConfig(cmd)
	if err != nil {
		return nil, fmt.Errorf("%w (or pass --endpoints, --cacert, --cert and --key to reach the store directly)", err)
	}
	tlsCfg, err := rest.TLSConfigFor(rc)
	if err != nil {
		return nil, err
	}
	if tlsCfg == nil || len(tlsCfg.Certificates) == 0 && tlsCfg.GetClientCertificate == nil {
		return nil, errors.New("the kubeconfig holds no client certificate: the store accepts only certificates of the cluster CA (use the admin kubeconfig a server wrote)")
	}
	members, err := apiStoreMembers(rc)
	if err != nil {
		return nil, err
	}
	var endpoints []string
	for _, m := range members {
		endpoints = append(endpoints, m.ClientURLs...)
	}
	if len(endpoints) == 0 {
		return nil, errors.New("the API lists no store member with a client URL")
	}
	dial, _ := f.GetDuration("dial-timeout")
	return clientv3.New(clientv3.Config{Endpoints: endpoints, TLS: storeTLS(tlsCfg), DialTimeout: dial, Logger: zap.NewNop()})
}

// storeTLS adapts the API client's TLS to the store's gRPC: gRPC
// negotiates h2 itself.
func storeTLS(c *tls.Config) *tls.Config {
	c = c.Clone()
	c.NextProtos = nil
	return c
}

// apiStoreMembers asks the API server for the store members.
func apiStoreMembers(rc *rest.Config) ([]bootstrap.StoreMember, error) {
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(rc.Host, "/")+bootstrap.PathStoreMembers, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("asking the API for the store members: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("asking the API for the store members: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	var list bootstrap.StoreMemberList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decoding the store members: %w", err)
	}
	return list.Members, nil
}
