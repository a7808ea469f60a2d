// Package kubelet runs the pods bound to one node: it registers the node
// and keeps its status and Lease, and for each pod drives the container
// runtime (sandbox, init containers, containers, probes, volumes,
// restarts, termination) and reports the pod's status, as the Kubernetes
// kubelet does, through the runtime interface of cairn/node/runtime.
//
// Pods are level-triggered: each has a worker that compares the pod
// object with what the runtime reports and converges, so an agent that
// restarts adopts the containers it left running instead of restarting
// them.
package kubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"cairn/internal/topdir"
	"cairn/node/kubelet/prober"
	"cairn/node/kubelet/volumes"
	"cairn/node/runtime"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Version is the kubelet version nodes report.
const Version = "v1.37.2-cairn"

// Defaults of Config's durations and limits, as the kubelet's.
const (
	DefaultKubeletPort               = 10250
	DefaultMaxPods                   = 110
	DefaultNodeLeaseRenewInterval    = 10 * time.Second
	DefaultNodeLeaseDuration         = 40 * time.Second
	DefaultNodeStatusUpdateFrequency = 10 * time.Second
	DefaultNodeStatusReportFrequency = 5 * time.Minute
	DefaultSyncFrequency             = time.Minute
	DefaultPodResyncInterval         = time.Second
	DefaultHousekeepingInterval      = 10 * time.Second
	DefaultCrashLoopBackOffBase      = 10 * time.Second
	DefaultCrashLoopBackOffMax       = 5 * time.Minute
	DefaultCrashLoopBackOffReset     = 10 * time.Minute
	DefaultEvictionMemoryAvailable   = 100 << 20
	DefaultEvictionDiskFreeFraction  = 0.10
	DefaultEvictionPIDFreeFraction   = 0.10
	DefaultContainerLogMaxSize       = 10 << 20
	DefaultContainerLogMaxFiles      = 5
)

// Config is what a Kubelet needs. Zero durations and limits take the
// defaults above.
type Config struct {
	// NodeName names the Node this kubelet registers and runs pods for.
	NodeName string
	Client   kubernetes.Interface
	// EventClient sends the kubelet's events; with a rate limit of its
	// own, a burst of pod starts' events does not hold up their status
	// writes. Client when nil.
	EventClient kubernetes.Interface
	Runtime     runtime.Runtime
	// RootDir holds per-pod directories (volumes, termination messages).
	RootDir string
	// PodLogsDir holds the containers' log files, one directory per pod.
	PodLogsDir string
	// NodeIP is the node's InternalIP, where the API server reaches the
	// kubelet and pods reach other nodes.
	NodeIP net.IP
	// Hostname is the node's Hostname address; NodeName when empty.
	Hostname string
	// KubeletPort is where the kubelet API listens, for
	// status.daemonEndpoints.
	KubeletPort int
	// NodeLabels are added to the default labels; Taints are set when
	// the node is first registered.
	NodeLabels map[string]string
	Taints     []corev1.Taint
	// CPU and Memory, when set, replace the host's in the node's
	// capacity (for several agents on one machine); MaxPods is its pods.
	CPU, Memory *resource.Quantity
	MaxPods     int
	// CgroupRoot is the cgroup under which pods' cgroups are made.
	CgroupRoot string
	// ClusterDNS and ClusterDomain make the resolv.conf of ClusterFirst
	// pods; without ClusterDNS they get NodeDNS, or else the host's.
	ClusterDNS    []string
	ClusterDomain string
	// PodNetworkReady, when set, is called with the node's podCIDR once
	// the runtime's pod network is configured for it, before any pod
	// starts there; NodeDNS then gives the address of the node's own
	// DNS server, if one serves.
	PodNetworkReady func(podCIDR string)
	NodeDNS         func() (netip.Addr, bool)
	// Routes, when set, gets the other nodes' pod networks.
	Routes Routes
	// Dial connects probes and hooks to pods; a net.Dialer's when nil.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	NodeLeaseRenewInterval    time.Duration
	NodeLeaseDuration         time.Duration
	NodeStatusUpdateFrequency time.Duration
	NodeStatusReportFrequency time.Duration
	// SyncFrequency is how often configMap, secret, downwardAPI and
	// projected volumes are refreshed from their sources.
	SyncFrequency time.Duration
	// PodResyncInterval is how often a pod's worker checks the runtime.
	PodResyncInterval time.Duration
	// HousekeepingInterval is how often orphaned sandboxes and pod
	// directories are cleaned up.
	HousekeepingInterval time.Duration
	// CrashLoopBackOff spaces container restarts; ImagePullBackOff
	// failed pulls (both default to 10s doubling to 5m).
	CrashLoopBackOff BackoffConfig
	ImagePullBackOff BackoffConfig
	// ContainerLogMaxSize is the size past which a container's log is
	// rotated; ContainerLogMaxFiles how many files of it are kept.
	ContainerLogMaxSize  int64
	ContainerLogMaxFiles int
	// AllowedUnsafeSysctls are the sysctls pods may set besides the
	// safe ones: names, or prefixes ending in "*" (see
	// ValidateSysctlPatterns).
	AllowedUnsafeSysctls []string
	// Eviction thresholds for the node's pressure conditions.
	EvictionMemoryAvailable  int64
	EvictionDiskFreeFraction float64
	EvictionPIDFreeFraction  float64

	// Logger receives the kubelet's events; it should name the node.
	Logger *slog.Logger
}

// BackoffConfig is a Backoff's settings.
type BackoffConfig struct {
	Base, Max, Reset time.Duration
}

func (c *Config) setDefaults() {
	d := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	d(&c.NodeLeaseRenewInterval, DefaultNodeLeaseRenewInterval)
	d(&c.NodeLeaseDuration, DefaultNodeLeaseDuration)
	d(&c.NodeStatusUpdateFrequency, DefaultNodeStatusUpdateFrequency)
	d(&c.NodeStatusReportFrequency, DefaultNodeStatusReportFrequency)
	d(&c.SyncFrequency, DefaultSyncFrequency)
	d(&c.PodResyncInterval, DefaultPodResyncInterval)
	d(&c.HousekeepingInterval, DefaultHousekeepingInterval)
	d(&c.CrashLoopBackOff.Base, DefaultCrashLoopBackOffBase)
	d(&c.CrashLoopBackOff.Max, DefaultCrashLoopBackOffMax)
	d(&c.CrashLoopBackOff.Reset, DefaultCrashLoopBackOffReset)
	d(&c.ImagePullBackOff.Base, DefaultCrashLoopBackOffBase)
	d(&c.ImagePullBackOff.Max, DefaultCrashLoopBackOffMax)
	d(&c.ImagePullBackOff.Reset, DefaultCrashLoopBackOffReset)
	if c.KubeletPort == 0 {
		c.KubeletPort = DefaultKubeletPort
	}
	if c.MaxPods == 0 {
		c.MaxPods = DefaultMaxPods
	}
	if c.ContainerLogMaxSize <= 0 {
		c.ContainerLogMaxSize = DefaultContainerLogMaxSize
	}
	if c.ContainerLogMaxFiles < 2 {
		c.ContainerLogMaxFiles = DefaultContainerLogMaxFiles
	}
	if c.EvictionMemoryAvailable == 0 {
		c.EvictionMemoryAvailable = DefaultEvictionMemoryAvailable
	}
	if c.EvictionDiskFreeFraction == 0 {
		c.EvictionDiskFreeFraction = DefaultEvictionDiskFreeFraction
	}
	if c.EvictionPIDFreeFraction == 0 {
		c.EvictionPIDFreeFraction = DefaultEvictionPIDFreeFraction
	}
	if c.Hostname == "" {
		c.Hostname = c.NodeName
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = "cluster.local"
	}
	if c.PodLogsDir == "" {
		c.PodLogsDir = filepath.Join(c.RootDir, "pod-logs")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Kubelet runs one node's pods.
type Kubelet struct {
	cfg     Config
	client  kubernetes.Interface
	rt      runtime.Runtime
	log     *slog.Logger
	volumes *volumes.Manager
	runner  *prober.Runner
	probes  *prober.Manager

	crashBackoff *Backoff
	pullBackoff  *Backoff

	recorder record.EventRecorder
	workers  *podWorkers

	// Set once Run has started.
	runtimeName, runtimeVersion string
	podLister                   corelisters.PodLister
	// admitMu orders admission decisions (see admit).
	admitMu       sync.Mutex
	admission     admitter
	nodeLister    corelisters.NodeLister
	serviceLister corelisters.ServiceLister

	nodeStatusKick chan struct{}
	networkKick    chan struct{}

	mu      sync.Mutex
	nodeUID string
	podCIDR string
	started chan struct{}
}

// New checks cfg and returns a Kubelet to Run.
func New(cfg Config) (*Kubelet, error) {
	switch {
	case cfg.NodeName == "":
		return nil, errors.New("kubelet: no node name")
	case cfg.Client == nil:
		return nil, errors.New("kubelet: no API client")
	case cfg.Runtime == nil:
		return nil, errors.New("kubelet: no container runtime")
	case cfg.RootDir == "":
		return nil, errors.New("kubelet: no root directory")
	case cfg.NodeIP == nil:
		return nil, errors.New("kubelet: no node IP")
	}
	cfg.setDefaults()
	for _, dir := range []string{cfg.RootDir, filepath.Join(cfg.RootDir, "pods"), cfg.PodLogsDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("kubelet: %w", err)
		}
	}
	// One directory per pod, unrelated to each other (see topdir).
	for _, dir := range []string{filepath.Join(cfg.RootDir, "pods"), cfg.PodLogsDir} {
		if err := topdir.Mark(dir); err != nil {
			cfg.Logger.Warn("cannot mark a directory of per-pod directories as a top directory", "dir", dir, "err", err)
		}
	}
	k := &Kubelet{
		cfg:            cfg,
		client:         cfg.Client,
		rt:             cfg.Runtime,
		log:            cfg.Logger,
		crashBackoff:   NewBackoff(cfg.CrashLoopBackOff.Base, cfg.CrashLoopBackOff.Max, cfg.CrashLoopBackOff.Reset),
		pullBackoff:    NewBackoff(cfg.ImagePullBackOff.Base, cfg.ImagePullBackOff.Max, cfg.ImagePullBackOff.Reset),
		nodeStatusKick: make(chan struct{}, 1),
		networkKick:    make(chan struct{}, 1),
		started:        make(chan struct{}),
	}
	k.volumes = volumes.NewManager(volumes.Config{PodsDir: filepath.Join(cfg.RootDir, "pods"), Client: cfg.Client, Logger: cfg.Logger})
	k.runner = &prober.Runner{Exec: cfg.Runtime, Dial: cfg.Dial}
	k.workers = newPodWorkers(k)
	return k, nil
}

// Run registers the node and runs its pods until ctx ends. Pods keep
// running when it returns: a restarted agent adopts them.
func (k *Kubelet) Run(ctx context.Context) error {
	v, err := k.rt.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return fmt.Errorf("kubelet: asking the container runtime its version: %w", err)
	}
	k.runtimeName, k.runtimeVersion = v.RuntimeName, v.RuntimeVersion
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	defer broadcaster.Shutdown()
	events := k.cfg.EventClient
	if events == nil {
		events = k.client
	}
	k.recorder = newRecorder(broadcaster, events, k.cfg.NodeName)
	k.probes = prober.NewManager(ctx, prober.Config{
		Runner:    k.runner,
		OnChange:  k.workers.kick,
		OnFailure: k.probeFailed,
		Logger:    k.log,
	})
	k.workers.start(ctx)
	if err := k.register(ctx); err != nil {
		return err
	}
	if err := k.startInformers(ctx); err != nil {
		return err
	}
	k.log.Info("kubelet started", "runtime", k.runtimeName+" "+k.runtimeVersion)
	k.recorder.Eventf(k.nodeRef(), corev1.EventTypeNormal, eventStarting, "Starting kubelet.")
	close(k.started)
	var wg sync.WaitGroup
	for _, loop := range []func(context.Context){k.leaseLoop, k.nodeStatusLoop, k.networkLoop, k.housekeepingLoop} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop(ctx)
		}()
	}
	<-ctx.Done()
	wg.Wait()
	k.workers.wait()
	k.probes.Wait()
	return nil
}
