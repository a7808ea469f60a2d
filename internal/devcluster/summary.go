package devcluster

import (
	"fmt"
	"text/tabwriter"
)

// printSummary tells the user what runs where and what to type next.
func (s *supervisor) printSummary(clusterIP string) {
	out, cmd := s.cfg.Out, s.cfg.Command
	what := "3 servers"
	if s.state.Nodes {
		what += " and 2 agents"
	}
	fmt.Fprintf(out, "\nCairn dev cluster running: %s (state in %s).\n\n", what, s.l.Dir)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "  NAME\tKUBERNETES API\tSTORE\tLOG")
	for _, srv := range s.topo.Servers {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", srv.Name, srv.APIURL(), srv.StoreURL(), s.l.Log(srv.Name))
	}
	w.Flush()
	if s.state.Nodes {
		fmt.Fprintln(out)
		w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "  NODE\tIP\tNETNS\tLOG")
		for _, n := range s.topo.Nodes {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", n.Name, n.IP, n.NetNS(), s.l.Log(n.Short))
		}
		w.Flush()
	}
	kc := s.l.Kubeconfig()
	if s.cfg.Kubeconfig != "" {
		kc = s.cfg.Kubeconfig
	}
	fmt.Fprintf(out, "\nAdmin kubeconfig: %s\n\nTry:\n", kc)
	kubectl := cmd + " kubectl"
	if kc != DefaultKubeconfig() {
		kubectl = "KUBECONFIG=" + kc + " " + kubectl
	}
	dev := func(sub string) string {
		if s.l.Dir != DefaultDir() {
			sub += " --dir " + s.l.Dir
		}
		return cmd + " dev " + sub
	}
	fmt.Fprintf(out, "  %s get nodes\n", kubectl)
	fmt.Fprintf(out, "  %s get pods -A -o wide\n", kubectl)
	fmt.Fprintf(out, "  %s\n", dev("status"))
	fmt.Fprintf(out, "  %s\n", dev("logs s1"))
	if s.state.Nodes {
		// The node's DNS answers the Service's name in the pod.
		url := fmt.Sprintf("http://%s/", DemoName)
		if clusterIP == "" {
			url = "http://SERVICE/"
		}
		fmt.Fprintf(out, "  %s run client --image=%s --restart=Never -- get --count 6 --retry-for 30s %s\n", kubectl, DemoImage, url)
		fmt.Fprintf(out, "  %s logs client\n", kubectl)
		if clusterIP == "" {
			fmt.Fprintf(out, "  (start with --demo for a Deployment and Service of the demo image)\n")
		}
	}
	fmt.Fprintf(out, "\nPress Ctrl-C to stop, or run `%s` from another terminal. The data survives restarts.\n", dev("down"))
}
