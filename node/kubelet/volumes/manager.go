// Package volumes prepares a pod's volumes on the host, where the
// runtime bind-mounts them into the containers: emptyDir (on disk or
// tmpfs), hostPath, and the configMap, secret, downwardAPI and projected
// volumes, written atomically and refreshed when their sources change.
package volumes

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"cairn/node/kubelet/downward"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Config is what a Manager needs.
type Config struct {
	// PodsDir holds one directory per pod, named by its UID.
	PodsDir string
	// Client reads config maps and secrets and requests tokens.
	Client kubernetes.Interface
	Logger *slog.Logger
}

// Manager sets up and tears down pods' volumes.
type Manager struct {
	cfg    Config
	mu     sync.Mutex
	tokens map[tokenKey]token
}

type tokenKey struct {
	pod  types.UID
	path string
}

type token struct {
	value   []byte
	refresh time.Time
}

// NewManager returns a volume manager.
func NewManager(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: cfg, tokens: map[tokenKey]token{}}
}

// PodDir is where the pod's volumes and other files live.
func (m *Manager) PodDir(uid types.UID) string {
	return filepath.Join(m.cfg.PodsDir, string(uid))
}

// Dir is the host directory of a pod's volume of the given plugin, laid
// out as the kubelet lays it out (pods/UID/volumes/kubernetes.io~PLUGIN/NAME).
func (m *Manager) Dir(uid types.UID, plugin, name string) string {
	return filepath.Join(m.PodDir(uid), "volumes", "kubernetes.io~"+plugin, name)
}

// Volume is one volume ready on the host.
type Volume struct {
	// Path is the host path the runtime mounts.
	Path string
	// ReadOnly volumes are mounted read-only whatever the mount says.
	ReadOnly bool
}

// Error names the volume a setup failed on; its text is the message of
// the pod's FailedMount event.
type Error struct {
	Volume string
	Err    error
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.Volume, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Setup makes every volume of pod ready and returns them by name. It is
// idempotent and is also how content volumes are refreshed: their files
// are rewritten only when their sources changed.
func (m *Manager) Setup(ctx context.Context, pod *corev1.Pod, ips downward.PodIPs, allocatable corev1.ResourceList) (map[string]Volume, error) {
	out := map[string]Volume{}
	if err := os.MkdirAll(m.PodDir(pod.UID), 0o755); err != nil {
		return out, fmt.Errorf("volumes: %w", err)
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		vol, err := m.setup(ctx, pod, v, ips, allocatable)
		if err != nil {
			return out, &Error{Volume: v.Name, Err: err}
		}
		out[v.Name] = vol
	}
	return out, nil
}

func (m *Manager) setup(ctx context.Context, pod *corev1.Pod, v *corev1.Volume, ips downward.PodIPs, allocatable corev1.ResourceList) (Volume, error) {
	switch {
	case v.EmptyDir != nil:
		return m.emptyDir(pod, v)
	case v.HostPath != nil:
		return hostPath(v.HostPath)
	case v.ConfigMap != nil:
		s := v.ConfigMap
		cm, err := m.configMap(ctx, pod.Namespace, s.Name, isTrue(s.Optional))
		if err != nil {
			return Volume{}, err
		}
		payload, err := ConfigMapPayload(cm, s.Items, s.DefaultMode, isTrue(s.Optional))
		if err != nil {
			return Volume{}, err
		}
		return m.write(pod.UID, "configmap", v.Name, payload, false)
	case v.Secret != nil:
		s := v.Secret
		sec, err := m.secret(ctx, pod.Namespace, s.SecretName, isTrue(s.Optional))
		if err != nil {
			return Volume{}, err
		}
		payload, err := SecretPayload(sec, s.Items, s.DefaultMode, isTrue(s.Optional))
		if err != nil {
			return Volume{}, err
		}
		return m.write(pod.UID, "secret", v.Name, payload, true)
	case v.DownwardAPI != nil:
		payload, err := DownwardPayload(pod, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode, ips, allocatable)
		if err != nil {
			return Volume{}, err
		}
		return m.write(pod.UID, "downward-api", v.Name, payload, false)
	case v.Projected != nil:
		payload, err := m.projected(ctx, pod, v.Projected, ips, allocatable)
		if err != nil {
			return Volume{}, err
		}
		return m.write(pod.UID, "projected", v.Name, payload, true)
	}
	return Volume{}, fmt.Errorf("unsupported volume type (Cairn supports emptyDir, hostPath, configMap, secret, downwardAPI and projected)")
}

// write puts payload in the volume's directory, on a tmpfs when the
// content is secret so it never reaches the disk.
func (m *Manager) write(uid types.UID, plugin, name string, payload map[string]File, memory bool) (Volume, error) {
	dir := m.Dir(uid, plugin, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Volume{}, err
	}
	if memory {
		if err := mountTmpfs(dir, 0, 0o755); err != nil {
			return Volume{}, err
		}
	}
	if _, err := WriteAtomic(dir, payload); err != nil {
		return Volume{}, err
	}
	return Volume{Path: dir, ReadOnly: true}, nil
}

func (m *Manager) emptyDir(pod *corev1.Pod, v *corev1.Volume) (Volume, error) {
	dir := m.Dir(pod.UID, "empty-dir", v.Name)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return Volume{}, err
	}
	switch v.EmptyDir.Medium {
	case corev1.StorageMediumDefault:
	case corev1.StorageMediumMemory:
		var size int64
		if v.EmptyDir.SizeLimit != nil {
			size = v.EmptyDir.SizeLimit.Value()
		}
		if err := mountTmpfs(dir, size, 0o777); err != nil {
			return Volume{}, err
		}
	default:
		return Volume{}, fmt.Errorf("emptyDir medium %q is not supported", v.EmptyDir.Medium)
	}
	// Any user of the pod may write its scratch space.
	if err := os.Chmod(dir, 0o777); err != nil {
		return Volume{}, err
	}
	return Volume{Path: dir}, nil
}

// configMap and secret read from the API server's watch cache
// (resourceVersion "0"), which takes no quorum round, and from the store
// only when the cache lacks the object, e.g. one created a moment ago.
// Volumes are refreshed every SyncFrequency, so a cache a moment behind
// is caught up with, as with Kubernetes' watch-based kubelet.
func (m *Manager) configMap(ctx context.Context, ns, name string, optional bool) (*corev1.ConfigMap, error) {
	cms := m.cfg.Client.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{ResourceVersion: "0"})
	if apierrors.IsNotFound(err) {
		cm, err = cms.Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) && optional {
		return nil, nil
	}
	return cm, err
}

func (m *Manager) secret(ctx context.Context, ns, name string, optional bool) (*corev1.Secret, error) {
	secrets := m.cfg.Client.CoreV1().Secrets(ns)
	s, err := secrets.Get(ctx, name, metav1.GetOptions{ResourceVersion: "0"})
	if apierrors.IsNotFound(err) {
		s, err = secrets.Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) && optional {
		return nil, nil
	}
	return s, err
}

func (m *Manager) projected(ctx context.Context, pod *corev1.Pod, p *corev1.ProjectedVolumeSource, ips downward.PodIPs, allocatable corev1.ResourceList) (map[string]File, error) {
	out := map[string]File{}
	for _, src := range p.Sources {
		var part map[string]File
		var err error
		switch {
		case src.ConfigMap != nil:
			s := src.ConfigMap
			var cm *corev1.ConfigMap
			if cm, err = m.configMap(ctx, pod.Namespace, s.Name, isTrue(s.Optional)); err == nil {
				part, err = ConfigMapPayload(cm, s.Items, p.DefaultMode, isTrue(s.Optional))
			}
		case src.Secret != nil:
			s := src.Secret
			var sec *corev1.Secret
			if sec, err = m.secret(ctx, pod.Namespace, s.Name, isTrue(s.Optional)); err == nil {
				part, err = SecretPayload(sec, s.Items, p.DefaultMode, isTrue(s.Optional))
			}
		case src.DownwardAPI != nil:
			part, err = DownwardPayload(pod, src.DownwardAPI.Items, p.DefaultMode, ips, allocatable)
		case src.ServiceAccountToken != nil:
			var tok []byte
			if tok, err = m.token(ctx, pod, src.ServiceAccountToken); err == nil {
				part = map[string]File{src.ServiceAccountToken.Path: {Data: tok, Mode: modeOf(nil, p.DefaultMode)}}
			}
		default:
			err = fmt.Errorf("unsupported projected volume source (Cairn projects configMap, secret, downwardAPI and serviceAccountToken)")
		}
		if err != nil {
			return nil, err
		}
		if err := merge(out, part); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// token returns a bound service account token for the pod, requesting a
// new one when 80% of the last one's life has passed, as the kubelet does.
func (m *Manager) token(ctx context.Context, pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection) ([]byte, error) {
	key := tokenKey{pod: pod.UID, path: p.Path}
	m.mu.Lock()
	t, ok := m.tokens[key]
	m.mu.Unlock()
	if ok && time.Now().Before(t.refresh) {
		return t.value, nil
	}
	expiration := int64(3600)
	if p.ExpirationSeconds != nil {
		expiration = *p.ExpirationSeconds
	}
	var audiences []string
	if p.Audience != "" {
		audiences = []string{p.Audience}
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences: audiences, ExpirationSeconds: &expiration,
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	resp, err := m.cfg.Client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token for service account %s/%s: %w", pod.Namespace, sa, err)
	}
	now := time.Now()
	life := resp.Status.ExpirationTimestamp.Sub(now)
	t = token{value: []byte(resp.Status.Token), refresh: now.Add(life * 8 / 10)}
	m.mu.Lock()
	m.tokens[key] = t
	m.mu.Unlock()
	return t.value, nil
}

// TearDown unmounts whatever the pod's directory holds and removes it.
func (m *Manager) TearDown(uid types.UID) error {
	m.mu.Lock()
	for k := range m.tokens {
		if k.pod == uid {
			delete(m.tokens, k)
		}
	}
	m.mu.Unlock()
	dir := m.PodDir(uid)
	if err := unmountUnder(dir); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("volumes: removing %s: %w", dir, err)
	}
	return nil
}

// PodUIDs lists the pods that have a directory, for cleanup of pods
// deleted while the agent was down.
func (m *Manager) PodUIDs() ([]types.UID, error) {
	entries, err := os.ReadDir(m.cfg.PodsDir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []types.UID
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, types.UID(e.Name()))
		}
	}
	return out, nil
}

func isTrue(b *bool) bool { return b != nil && *b }
