package dns

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"cairn/internal/nsthread"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// DefaultDomain is the cluster domain, as the kubelet's default.
const DefaultDomain = "cluster.local"

// forwardTimeout bounds each try of an upstream resolver.
const forwardTimeout = 2 * time.Second

// Config is what a node's DNS server needs.
type Config struct {
	// Informers gives the Services and EndpointSlices the names come
	// from; the caller starts it (again after New, which may add
	// informers to it) and shuts it down.
	Informers informers.SharedInformerFactory
	// Domain is the cluster domain (DefaultDomain if empty).
	Domain string
	// Addr is where to listen, on UDP and TCP. The address need not
	// exist yet: the pod network's gateway appears with the first pod
	// under some runtimes.
	Addr netip.AddrPort
	// NetNS is the network namespace to listen in; empty for the
	// agent's own.
	NetNS string
	// Upstreams answer the names outside the domain, as host:port; nil
	// reads the nameservers of ResolvConf.
	Upstreams []string
	// ResolvConf is the node's resolver configuration
	// ("/etc/resolv.conf" if empty).
	ResolvConf string
	// Metrics, when set, count the answers.
	Metrics *Metrics
	Logger  *slog.Logger
}

// Server answers DNS queries for a node's pods.
type Server struct {
	cfg       Config
	log       *slog.Logger
	zone      *zone
	synced    func() bool
	upstreams []string
	pc        net.PacketConn
	ln        net.Listener
}

// New prepares a server; Listen and Serve run it.
func New(cfg Config) (*Server, error) {
	if cfg.Informers == nil {
		return nil, errors.New("dns: no informer factory")
	}
	if !cfg.Addr.IsValid() {
		return nil, errors.New("dns: no address to listen on")
	}
	if cfg.Domain == "" {
		cfg.Domain = DefaultDomain
	}
	domain := strings.ToLower(strings.Trim(cfg.Domain, "."))
	origin := dns.Fqdn(domain)
	if errs := validation.IsDNS1123Subdomain(domain); len(errs) > 0 {
		return nil, fmt.Errorf("dns: %q is not a domain name: give the cluster domain, e.g. %s", cfg.Domain, DefaultDomain)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	upstreams := cfg.Upstreams
	if upstreams == nil {
		path := cfg.ResolvConf
		if path == "" {
			path = "/etc/resolv.conf"
		}
		var err error
		if upstreams, err = readNameservers(path); err != nil {
			// Cluster names still resolve; others will fail, and say why.
			cfg.Logger.Warn("no upstream resolvers: only cluster names will resolve", "err", err)
		}
	}
	// The server must not forward to itself.
	self := cfg.Addr.String()
	kept := upstreams[:0:0]
	for _, u := range upstreams {
		if u != self {
			kept = append(kept, u)
		}
	}
	services := cfg.Informers.Core().V1().Services()
	slices := cfg.Informers.Discovery().V1().EndpointSlices()
	s := &Server{
		cfg: cfg, log: cfg.Logger, upstreams: kept,
		zone: &zone{origin: origin, services: services.Lister(), slicesOf: slices.Lister()},
	}
	svcSynced, sliceSynced := services.Informer().HasSynced, slices.Informer().HasSynced
	s.synced = func() bool { return svcSynced() && sliceSynced() }
	return s, nil
}

// Listen opens the server's UDP and TCP sockets, so that the address
// answers from then on; Serve answers.
func (s *Server) Listen() error {
	err := nsthread.Run(s.cfg.NetNS, func() error {
		lc := net.ListenConfig{Control: freebind}
		var err error
		if s.pc, err = lc.ListenPacket(context.Background(), "udp", s.cfg.Addr.String()); err != nil {
			return err
		}
		if s.ln, err = lc.Listen(context.Background(), "tcp", s.cfg.Addr.String()); err != nil {
			s.pc.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("dns: listening on %s: %w (is another DNS server using port %d there?)", s.cfg.Addr, err, s.cfg.Addr.Port())
	}
	return nil
}

// Serve answers queries on the sockets of Listen until ctx ends, then
// closes them.
func (s *Server) Serve(ctx context.Context) error {
	if s.pc == nil {
		return errors.New("dns: Serve before Listen")
	}
	handler := dns.HandlerFunc(s.serveDNS)
	servers := []*dns.Server{
		{PacketConn: s.pc, Handler: handler},
		{Listener: s.ln, Handler: handler, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second},
	}
	var wg sync.WaitGroup
	errc := make(chan error, len(servers))
	for _, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- srv.ActivateAndServe()
		}()
	}
	s.log.Info("cluster DNS serving", "addr", s.cfg.Addr.String(), "domain", strings.TrimSuffix(s.zone.origin, "."), "upstreams", s.upstreams)
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		err = fmt.Errorf("dns: %w", err)
	}
	for _, srv := range servers {
		srv.Shutdown()
	}
	wg.Wait()
	s.pc.Close()
	s.ln.Close()
	return err
}

// freebind lets the sockets bind the gateway's address before it exists.
func freebind(network, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		if strings.HasSuffix(network, "6") {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_IPV6, unix.IPV6_FREEBIND, 1)
		} else {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_IP, unix.IP_FREEBIND, 1)
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// serveDNS answers one query: the zone's names from the caches, the
// others through the upstream resolvers.
func (s *Server) serveDNS(w dns.ResponseWriter, req *dns.Msg) {
	if len(req.Question) != 1 || req.Opcode != dns.OpcodeQuery {
		m := new(dns.Msg)
		m.SetRcode(req, dns.RcodeNotImplemented)
		w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	if q.Qtype == dns.TypePTR && s.synced() {
		if ip, ok := reverseAddr(q.Name); ok {
			if names := s.zone.reverse(ip); len(names) > 0 {
				m := new(dns.Msg)
				m.SetReply(req)
				m.Authoritative, m.RecursionAvailable = true, true
				for _, n := range names {
					m.Answer = append(m.Answer, &dns.PTR{Hdr: header(q.Name, dns.TypePTR), Ptr: n})
				}
				s.cfg.Metrics.observe(sourceCluster, m.Rcode)
				w.WriteMsg(m)
				return
			}
		}
	}
	if !s.zone.contains(q.Name) {
		s.forward(w, req)
		return
	}
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative, m.RecursionAvailable = true, true
	if !s.synced() {
		// Not NXDOMAIN, which a resolver would cache: try again soon.
		m.SetRcode(req, dns.RcodeServerFailure)
		s.cfg.Metrics.observe(sourceCluster, m.Rcode)
		w.WriteMsg(m)
		return
	}
	a := s.zone.resolve(q)
	m.Rcode = a.rcode
	m.Answer, m.Extra = a.answer, a.extra
	if a.cname != "" {
		m.Answer = append(m.Answer, s.chase(a.cname, q.Qtype)...)
	}
	if len(m.Answer) == 0 {
		m.Ns = []dns.RR{s.zone.soa()}
	}
	if req.IsEdns0() != nil {
		m.SetEdns0(dns.DefaultMsgSize, false)
	}
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		m.Truncate(udpSize(req))
	}
	s.cfg.Metrics.observe(sourceCluster, m.Rcode)
	w.WriteMsg(m)
}

// chase resolves an ExternalName Service's target for the client, which
// asked for the Service's name and may not follow a CNAME itself.
func (s *Server) chase(target string, qtype uint16) []dns.RR {
	q := dns.Question{Name: target, Qtype: qtype, Qclass: dns.ClassINET}
	if s.zone.contains(target) {
		return s.zone.resolve(q).answer
	}
	sub := new(dns.Msg)
	sub.SetQuestion(target, qtype)
	sub.RecursionDesired = true
	resp, err := s.exchange(sub, "udp")
	if err != nil || resp.Rcode != dns.RcodeSuccess {
		return nil
	}
	return resp.Answer
}

// forward passes req to the upstream resolvers and their answer back.
func (s *Server) forward(w dns.ResponseWriter, req *dns.Msg) {
	network := "udp"
	if _, tcp := w.RemoteAddr().(*net.TCPAddr); tcp {
		network = "tcp"
	}
	resp, err := s.exchange(req, network)
	if err != nil {
		s.log.Debug("forwarding a query failed", "name", req.Question[0].Name, "err", err)
		m := new(dns.Msg)
		m.SetRcode(req, dns.RcodeServerFailure)
		s.cfg.Metrics.observe(sourceUpstream, m.Rcode)
		w.WriteMsg(m)
		return
	}
	s.cfg.Metrics.observe(sourceUpstream, resp.Rcode)
	resp.Id = req.Id
	if network == "udp" {
		resp.Truncate(udpSize(req))
	}
	w.WriteMsg(resp)
}

// exchange asks each upstream in turn, over TCP again when a UDP answer
// was truncated.
func (s *Server) exchange(req *dns.Msg, network string) (*dns.Msg, error) {
	if len(s.upstreams) == 0 {
		return nil, errors.New("no upstream resolvers")
	}
	var last error
	for _, u := range s.upstreams {
		c := &dns.Client{Net: network, Timeout: forwardTimeout}
		resp, _, err := c.Exchange(req, u)
		if err == nil && resp.Truncated && network == "udp" {
			c.Net = "tcp"
			resp, _, err = c.Exchange(req, u)
		}
		if err == nil {
			return resp, nil
		}
		last = err
	}
	return nil, last
}

// udpSize is the largest UDP answer the client takes.
func udpSize(req *dns.Msg) int {
	if o := req.IsEdns0(); o != nil && o.UDPSize() > dns.MinMsgSize {
		return int(o.UDPSize())
	}
	return dns.MinMsgSize
}

// readNameservers lists the nameservers of a resolv.conf, as host:53.
func readNameservers(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[0] != "nameserver" {
			continue
		}
		ip, err := netip.ParseAddr(fields[1])
		if err != nil {
			continue
		}
		out = append(out, netip.AddrPortFrom(ip, 53).String())
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s lists no nameserver", path)
	}
	return out, nil
}

// WaitForSync waits until the caches hold the cluster's Services and
// EndpointSlices, or ctx ends.
func (s *Server) WaitForSync(ctx context.Context) bool {
	return cache.WaitForCacheSync(ctx.Done(), s.synced)
}
