package devcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"cairn/internal/pki"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// leaderLease is the Lease the leader-only loops' replica holds.
const leaderLease = "cairn-leader"

// Status writes the members of the cluster in dir with their Raft roles,
// its nodes and its pods to w.
func Status(ctx context.Context, dir string, w io.Writer) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	st, err := ReadRunState(dir)
	if err != nil {
		return err
	}
	if st == nil {
		return fmt.Errorf("devcluster: no cluster runs in %s: start one with `cairn dev`", dir)
	}
	if st.SupervisorRunning() {
		fmt.Fprintf(w, "Cluster in %s, started %s by cairn dev (pid %d).\n", dir, st.Started.Local().Format(time.DateTime), st.PID)
	} else {
		fmt.Fprintf(w, "Cluster in %s: its cairn dev (pid %d) is gone; `cairn dev down` cleans up.\n", dir, st.PID)
	}
	t := st.Topology()
	printMembers(ctx, w, dir, st, t)
	clients, err := newAPIClients(dir, t)
	if err != nil {
		return err
	}
	var nodes *corev1.NodeList
	var pods *corev1.PodList
	var lease string
	err = clients.do(ctx, func(c kubernetes.Interface) error {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		var err error
		if nodes, err = c.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
			return err
		}
		if pods, err = c.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err != nil {
			return err
		}
		if l, err := c.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, leaderLease, metav1.GetOptions{}); err == nil && l.Spec.HolderIdentity != nil {
			lease = *l.Spec.HolderIdentity
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(w, "\nNo API server answers: %v\n", err)
		return nil
	}
	if lease != "" {
		fmt.Fprintf(w, "Scheduler and controllers run on %s (Lease %s/%s).\n", lease, metav1.NamespaceSystem, leaderLease)
	}
	printNodes(w, st, nodes.Items)
	printPods(w, pods.Items)
	return nil
}

func printMembers(ctx context.Context, w io.Writer, dir string, st *RunState, t Topology) {
	p := Layout{Dir: dir}.PKI()
	tlsCfg, tlsErr := pki.ClientConfig(filepath.Join(p, pki.CACertFile), filepath.Join(p, pki.AdminCertFile), filepath.Join(p, pki.AdminKeyFile))
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tPID\tPROCESS\tRAFT\tKUBERNETES API\tSTORE")
	for _, s := range t.Servers {
		proc, pid := "not started", "-"
		if p, ok := st.Process(s.Name); ok {
			pid = strconv.Itoa(p.PID)
			proc = "exited"
			if p.Running() {
				proc = "running"
			}
		}
		role := "unreachable"
		if tlsErr == nil && proc == "running" {
			role = raftRole(ctx, s.StoreURL(), tlsCfg)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, pid, proc, role, s.APIURL(), s.StoreURL())
	}
	tw.Flush()
}

// raftRole asks a member whether it leads.
func raftRole(ctx context.Context, url string, tlsCfg *tls.Config) string {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, TLS: tlsCfg, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return "unreachable"
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := cli.Status(ctx, url)
	switch {
	case err != nil:
		return "unreachable"
	case resp.Leader == 0:
		return "no leader"
	case resp.Leader == resp.Header.MemberId:
		return "leader"
	case resp.IsLearner:
		return "learner"
	}
	return "follower"
}

func printNodes(w io.Writer, st *RunState, nodes []corev1.Node) {
	fmt.Fprintln(w)
	if len(nodes) == 0 {
		if st.Nodes {
			fmt.Fprintln(w, "No nodes registered yet.")
		} else {
			fmt.Fprintf(w, "No nodes: %s.\n", st.NoNodesReason)
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATUS\tINTERNAL-IP\tPOD-CIDR\tAGENT")
	for _, n := range nodes {
		status := "Unknown"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				status = map[corev1.ConditionStatus]string{corev1.ConditionTrue: "Ready", corev1.ConditionFalse: "NotReady"}[c.Status]
				if status == "" {
					status = "Unknown"
				}
			}
		}
		ip := "-"
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ip = a.Address
			}
		}
		agent := "-"
		if p, ok := st.Process(strings.TrimPrefix(n.Name, NamePrefix)); ok {
			agent = fmt.Sprintf("pid %d, exited", p.PID)
			if p.Running() {
				agent = fmt.Sprintf("pid %d, running", p.PID)
			}
		}
		cidr := n.Spec.PodCIDR
		if cidr == "" {
			cidr = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", n.Name, status, ip, cidr, agent)
	}
	tw.Flush()
}

func printPods(w io.Writer, pods []corev1.Pod) {
	fmt.Fprintln(w)
	if len(pods) == 0 {
		fmt.Fprintln(w, "No pods.")
		return
	}
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tPOD\tREADY\tSTATUS\tRESTARTS\tNODE\tIP")
	for _, p := range pods {
		ready, restarts := 0, int32(0)
		for _, c := range p.Status.ContainerStatuses {
			if c.Ready {
				ready++
			}
			restarts += c.RestartCount
		}
		status := string(p.Status.Phase)
		if p.DeletionTimestamp != nil {
			status = "Terminating"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%d\t%s\t%s\n", p.Namespace, p.Name, ready, len(p.Spec.Containers), status, restarts,
			orDash(p.Spec.NodeName), orDash(p.Status.PodIP))
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
