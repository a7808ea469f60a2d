package ebpf

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"cairn/ebpf/datapath"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

const (
	// defaultResync is how often the whole state is reprogrammed, which
	// writes nothing when nothing drifted.
	defaultResync = 5 * time.Minute
	// fullSyncKey is the queue key of a full resync; no Service key is
	// empty.
	fullSyncKey = ""
	// sliceIndex indexes EndpointSlices by the key of their Service.
	sliceIndex = "service"
)

// ProxyConfig is used to create a Proxy.
type ProxyConfig struct {
	// Client reaches the API server.
	Client kubernetes.Interface
	// Informers, when set, is a factory the caller owns, starts and shuts
	// down, whose Service and EndpointSlice informers the proxy shares
	// with others; without it the proxy makes its own from Client.
	Informers informers.SharedInformerFactory
	// NodeName is this node; it selects the endpoints of Services with
	// internalTrafficPolicy Local and names the default PinPath.
	NodeName string
	// CgroupPath is the cgroup v2 directory whose processes get Service
	// translation; default the cgroup2 mount root. Agents sharing a
	// machine each give their own node's cgroup.
	CgroupPath string
	// PinPath is a bpffs directory for this node's pinned maps and links;
	// default DefaultPinRoot/NodeName.
	PinPath string
	// MapSize is the capacity of the service and backend maps; default
	// datapath.DefaultMapSize.
	MapSize uint32
	// ResyncPeriod is how often everything is reprogrammed from the
	// informer caches; default 5 minutes.
	ResyncPeriod time.Duration
	// Logger receives the proxy's logs; nil discards them.
	Logger *slog.Logger
	// Metrics, if set, receives the proxy's metrics. Wrap it with a node
	// label when several proxies share a process.
	Metrics prometheus.Registerer
}

// Proxy programs the eBPF Service datapath from Services and
// EndpointSlices.
type Proxy struct {
	cfg     ProxyConfig
	log     *slog.Logger
	dp      *datapath.Datapath
	metrics *metrics

	factory   informers.SharedInformerFactory
	ownsInf   bool // the factory is the proxy's own, to start and shut down
	services  corelisters.ServiceLister
	slices    cache.Indexer
	hasSynced []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	resync    time.Duration

	// mu serializes syncs, which the single worker runs anyway; it lets
	// tests drive a sync directly.
	mu sync.Mutex
	// programmed holds the frontends last programmed for each Service key.
	programmed map[string][]datapath.Frontend

	// pendingMu guards pending: when the first unprogrammed change of each
	// key was seen, for the sync latency metric.
	pendingMu sync.Mutex
	pending   map[string]time.Time
}

// NewProxy checks the host, loads the BPF programs and maps (taking over
// those a previous agent pinned) and sets up the informers. Nothing is
// attached or watched until Run.
func NewProxy(cfg ProxyConfig) (*Proxy, error) {
	if cfg.Client == nil {
		return nil, errors.New("ebpf: Client is required")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := datapath.CheckSupport(cfg.datapathConfig()); err != nil {
		return nil, err
	}
	dp, err := datapath.Open(cfg.datapathConfig())
	if err != nil {
		return nil, err
	}
	factory, owns := cfg.Informers, cfg.Informers == nil
	if owns {
		factory = informers.NewSharedInformerFactory(cfg.Client, 0)
	}
	p := &Proxy{
		cfg:        cfg,
		log:        cfg.Logger,
		dp:         dp,
		metrics:    newMetrics(dp.Stats),
		factory:    factory,
		ownsInf:    owns,
		queue:      workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		resync:     cfg.ResyncPeriod,
		programmed: map[string][]datapath.Frontend{},
		pending:    map[string]time.Time{},
	}
	if cfg.Metrics != nil {
		if err := p.metrics.register(cfg.Metrics); err != nil {
			dp.Close()
			return nil, fmt.Errorf("ebpf: register metrics: %w", err)
		}
	}
	if err := p.setupInformers(); err != nil {
		dp.Close()
		return nil, err
	}
	return p, nil
}

func (p *Proxy) setupInformers() error {
	svcInf := p.factory.Core().V1().Services()
	sliceInf := p.factory.Discovery().V1().EndpointSlices()
	if err := sliceInf.Informer().AddIndexers(cache.Indexers{sliceIndex: sliceServiceKey}); err != nil {
		return fmt.Errorf("ebpf: index EndpointSlices: %w", err)
	}
	p.services = svcInf.Lister()
	p.slices = sliceInf.Informer().GetIndexer()
	onService := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			p.enqueue(key)
		}
	}
	onSlice := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if keys, err := sliceServiceKey(obj); err == nil && len(keys) == 1 {
			p.enqueue(keys[0])
		}
	}
	if _, err := svcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onService,
		UpdateFunc: func(_, obj any) { onService(obj) },
		DeleteFunc: onService,
	}); err != nil {
		return fmt.Errorf("ebpf: watch Services: %w", err)
	}
	if _, err := sliceInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onSlice,
		UpdateFunc: func(_, obj any) { onSlice(obj) },
		DeleteFunc: onSlice,
	}); err != nil {
		return fmt.Errorf("ebpf: watch EndpointSlices: %w", err)
	}
	p.hasSynced = []cache.InformerSynced{svcInf.Informer().HasSynced, sliceInf.Informer().HasSynced}
	return nil
}

// sliceServiceKey indexes a slice under "namespace/service".
func sliceServiceKey(obj any) ([]string, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil, fmt.Errorf("ebpf: not an EndpointSlice: %T", obj)
	}
	name := s.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return nil, nil
	}
	return []string{s.Namespace + "/" + name}, nil
}

func (p *Proxy) enqueue(key string) {
	p.pendingMu.Lock()
	if _, ok := p.pending[key]; !ok {
		p.pending[key] = time.Now()
	}
	p.pendingMu.Unlock()
	p.queue.Add(key)
}

// Run watches Services and EndpointSlices until ctx ends. Once the caches
// have synced it programs the complete state, and only then attaches the
// programs, so a restarted agent never serves from half-filled maps.
func (p *Proxy) Run(ctx context.Context) error {
	if p.ownsInf {
		defer p.factory.Shutdown()
		p.factory.Start(ctx.Done())
	}
	defer p.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), p.hasSynced...) {
		return fmt.Errorf("ebpf: informer caches did not sync: %w", ctx.Err())
	}
	start := time.Now()
	if err := p.syncAll(); err != nil {
		// Attach anyway: what did get programmed beats no translation, and
		// the worker retries the rest.
		p.metrics.syncErrors.Inc()
		p.log.Error("initial Service programming incomplete", "err", err)
		p.queue.AddRateLimited(fullSyncKey)
	}
	// The initial listing is not a change: keep it out of the latency.
	p.pendingMu.Lock()
	clear(p.pending)
	p.pendingMu.Unlock()
	if err := p.dp.Attach(); err != nil {
		return err
	}
	st := p.dp.Stats()
	p.log.Info("eBPF Service datapath attached", "cgroup", p.cfg.CgroupPath, "pinPath", p.cfg.PinPath,
		"services", st.Services, "backends", st.Backends, "took", time.Since(start))

	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for p.processNext() {
		}
	}()
	go func() {
		defer wg.Done()
		t := time.NewTicker(p.resync)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				p.queue.Add(fullSyncKey)
			}
		}
	}()
	<-ctx.Done()
	p.queue.ShutDown()
	wg.Wait()
	return nil
}

func (p *Proxy) processNext() bool {
	key, quit := p.queue.Get()
	if quit {
		return false
	}
	defer p.queue.Done(key)
	var err error
	if key == fullSyncKey {
		err = p.syncAll()
	} else {
		err = p.syncService(key)
	}
	if err != nil {
		p.metrics.syncErrors.Inc()
		p.log.Warn("programming Services failed; retrying", "key", key, "err", err)
		p.queue.AddRateLimited(key)
		return true
	}
	p.queue.Forget(key)
	return true
}

// syncService brings one Service's frontends in the maps up to date.
func (p *Proxy) syncService(key string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not ours to retry
	}
	var want []datapath.Service
	svc, err := p.services.Services(ns).Get(name)
	switch {
	case err == nil:
		want = desiredServices(svc, p.slicesOf(key), p.cfg.NodeName)
	case !apierrors.IsNotFound(err):
		return err
	}
	keep := map[datapath.Frontend]bool{}
	for _, s := range want {
		keep[s.Frontend] = true
	}
	var gone []datapath.Frontend
	for _, fe := range p.programmed[key] {
		if !keep[fe] {
			gone = append(gone, fe)
		}
	}
	if err := p.dp.Upsert(want...); err != nil {
		return err
	}
	if err := p.dp.Delete(gone...); err != nil {
		return err
	}
	if len(want) == 0 {
		delete(p.programmed, key)
	} else {
		p.programmed[key] = frontendsOf(want)
	}
	p.observe(key)
	return nil
}

// syncAll programs every Service from the caches and removes whatever
// else the maps hold, e.g. Services deleted while no agent ran.
func (p *Proxy) syncAll() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	svcs, err := p.services.List(labels.Everything())
	if err != nil {
		return err
	}
	slices.SortFunc(svcs, func(a, b *corev1.Service) int {
		return cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	var all []datapath.Service
	programmed := map[string][]datapath.Frontend{}
	claimed := map[datapath.Frontend]string{}
	for _, svc := range svcs {
		key := svc.Namespace + "/" + svc.Name
		var mine []datapath.Service
		for _, s := range desiredServices(svc, p.slicesOf(key), p.cfg.NodeName) {
			if other, dup := claimed[s.Frontend]; dup {
				p.log.Warn("two Services claim one frontend; keeping the first", "frontend", s.Frontend.String(), "kept", other, "ignored", key)
				continue
			}
			claimed[s.Frontend] = key
			mine = append(mine, s)
		}
		if len(mine) > 0 {
			programmed[key] = frontendsOf(mine)
			all = append(all, mine...)
		}
	}
	if err := p.dp.Sync(all); err != nil {
		return err
	}
	p.programmed = programmed
	p.observeAll()
	return nil
}

func (p *Proxy) slicesOf(key string) []*discoveryv1.EndpointSlice {
	objs, err := p.slices.ByIndex(sliceIndex, key)
	if err != nil {
		return nil
	}
	out := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		if s, ok := o.(*discoveryv1.EndpointSlice); ok {
			out = append(out, s)
		}
	}
	return out
}

func (p *Proxy) observe(key string) {
	p.pendingMu.Lock()
	defer p.pendingMu.Unlock()
	if t, ok := p.pending[key]; ok {
		p.metrics.latency.Observe(time.Since(t).Seconds())
		delete(p.pending, key)
	}
}

func (p *Proxy) observeAll() {
	p.pendingMu.Lock()
	defer p.pendingMu.Unlock()
	for key, t := range p.pending {
		p.metrics.latency.Observe(time.Since(t).Seconds())
		delete(p.pending, key)
	}
}

// Close releases the proxy's handles once Run has returned. The programs
// stay attached with the last programmed state, so Service traffic keeps
// flowing until the next agent takes over.
func (p *Proxy) Close() error { return p.dp.Close() }

// Uninstall detaches the programs and removes the pinned maps, for a node
// that leaves the cluster; Service addresses stop working for its pods.
func (p *Proxy) Uninstall() error { return p.dp.Uninstall() }

func frontendsOf(svcs []datapath.Service) []datapath.Frontend {
	out := make([]datapath.Frontend, len(svcs))
	for i, s := range svcs {
		out[i] = s.Frontend
	}
	return out
}
