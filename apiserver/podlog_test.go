package apiserver

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn/internal/pki"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// fakeKubelet plays the containerLogs endpoint of a kubelet's HTTPS API,
// standing in for the node agent until it serves one: it checks the API
// server's client certificate and records what it was asked.
type fakeKubelet struct {
	srv     *httptest.Server
	release chan struct{} // lets a followed log send its second chunk

	mu       sync.Mutex
	requests []*url.URL
	clients  []string // client certificate common names
}

func startFakeKubelet(t *testing.T, ca *pki.CA) *fakeKubelet {
	t.Helper()
	return startFakeKubeletAs(t, ca, "kubelet")
}

// startFakeKubeletAs is startFakeKubelet with a serving certificate named
// name.
func startFakeKubeletAs(t *testing.T, ca *pki.CA, name string) *fakeKubelet {
	t.Helper()
	serving, err := ca.ServerConfig(name, []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	k := &fakeKubelet{release: make(chan struct{})}
	k.srv = httptest.NewUnstartedServer(http.HandlerFunc(k.serve))
	k.srv.TLS = serving
	k.srv.StartTLS()
	t.Cleanup(k.srv.Close)
	return k
}

func (k *fakeKubelet) serve(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	k.requests = append(k.requests, r.URL)
	k.clients = append(k.clients, r.TLS.PeerCertificates[0].Subject.CommonName)
	k.mu.Unlock()
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if len(parts) != 3 {
		http.NotFound(w, r)
		return
	}
	pod, container := parts[1], parts[2]
	switch pod {
	case "gone":
		http.Error(w, fmt.Sprintf("pod %q is not on this node", pod), http.StatusNotFound)
		return
	case "waiting":
		http.Error(w, fmt.Sprintf("container %q in pod %q is waiting to start: ContainerCreating", container, pod), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "first line of %s/%s\n", pod, container)
	if r.URL.Query().Get("follow") != "true" {
		return
	}
	w.(http.Flusher).Flush()
	select {
	case <-k.release:
	case <-r.Context().Done():
		return
	}
	fmt.Fprintf(w, "second line of %s/%s\n", pod, container)
}

// last returns the last request the kubelet got and its client's name.
func (k *fakeKubelet) last() (*url.URL, string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.requests) == 0 {
		return nil, ""
	}
	return k.requests[len(k.requests)-1], k.clients[len(k.clients)-1]
}

// TestPodLogsAreProxiedToTheKubelet checks pods/log as kubectl logs uses
// it: the API server finds the pod's node and container, calls the
// kubelet's containerLogs endpoint with its client certificate and the
// same options, and streams the answer back as it comes.
// startAPIWithKubeletClient starts an API server on replica 0 of c with
// a kubelet client certificate, as the server mints for itself, and
// returns its client.
func startAPIWithKubeletClient(t *testing.T, c *testCluster) kubernetes.Interface {
	t.Helper()
	clientCert, err := c.ca.IssueTLS(pki.CertRequest{CommonName: "cairn-apiserver-kubelet-client", Organization: []string{"system:masters"}, Client: true})
	if err != nil {
		t.Fatal(err)
	}
	i := c.startAPIWith(0, func(cfg *Config, _ string) {
		cfg.KubeletClientTLS = &tls.Config{Certificates: []tls.Certificate{clientCert}, RootCAs: c.ca.Pool(), MinVersion: tls.VersionTLS12}
	})
	return c.unthrottledClient(t, i)
}

func TestPodLogsAreProxiedToTheKubelet(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	kubelet := startFakeKubelet(t, c.ca)
	cs := startAPIWithKubeletClient(t, c)
	createNamespace(t, c, "team")
	host, port, _ := net.SplitHostPort(kubelet.srv.Listener.Addr().String())
	kubeletPort, _ := strconv.Atoi(port)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n1.invalid"}, {Type: corev1.NodeInternalIP, Address: host}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(kubeletPort)}},
	}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := cs.CoreV1().Pods("team")
	for _, p := range []*corev1.Pod{
		testPod("one"),
		func() *corev1.Pod {
			p := testPod("two")
			p.Spec.Containers = []corev1.Container{{Name: "a", Image: "a:1"}, {Name: "b", Image: "b:1"}}
			return p
		}(),
		testPod("gone"),
		testPod("waiting"),
		testPod("pending"),
	} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if p.Name != "pending" {
			if err := pods.Bind(ctx, binding(p.Name, "n1"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitNode := func(t *testing.T) {
		// The log request reads the node from the API server's cache.
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{ResourceVersion: "0"}); err == nil || time.Now().After(deadline) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitNode(t)

	t.Run("OnlyContainerWithEveryOption", func(t *testing.T) {
		body, err := pods.GetLogs("one", &corev1.PodLogOptions{TailLines: ptr.To[int64](10), SinceSeconds: ptr.To[int64](60),
			LimitBytes: ptr.To[int64](1000), Timestamps: true, Previous: true}).DoRaw(ctx)
		if err != nil || string(body) != "first line of one/web\n" {
			t.Fatalf("log %q: %v", body, err)
		}
		u, client := kubelet.last()
		want := url.Values{"tailLines": {"10"}, "sinceSeconds": {"60"}, "limitBytes": {"1000"}, "timestamps": {"true"}, "previous": {"true"}}
		if u.Path != "/containerLogs/team/one/web" || u.Query().Encode() != want.Encode() {
			t.Fatalf("kubelet asked %s?%s, want /containerLogs/team/one/web?%s", u.Path, u.RawQuery, want.Encode())
		}
		if client != "cairn-apiserver-kubelet-client" {
			t.Fatalf("kubelet client %q", client)
		}
	})

	t.Run("NamedContainer", func(t *testing.T) {
		body, err := pods.GetLogs("two", &corev1.PodLogOptions{Container: "b"}).DoRaw(ctx)
		if u, _ := kubelet.last(); err != nil || string(body) != "first line of two/b\n" || u.Path != "/containerLogs/team/two/b" || u.RawQuery != "" {
			t.Fatalf("log %q (%v), kubelet asked %v", body, err, u)
		}
	})

	t.Run("LimitBytesCutsTheStream", func(t *testing.T) {
		body, err := pods.GetLogs("one", &corev1.PodLogOptions{LimitBytes: ptr.To[int64](5)}).DoRaw(ctx)
		if err != nil || string(body) != "first" {
			t.Fatalf("log %q: %v", body, err)
		}
	})

	t.Run("FollowStreamsEachChunkAsItComes", func(t *testing.T) {
		stream, err := pods.GetLogs("one", &corev1.PodLogOptions{Follow: true}).Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		lines := bufio.NewReader(stream)
		first := make(chan string, 1)
		go func() {
			line, _ := lines.ReadString('\n')
			first <- line
		}()
		select {
		case line := <-first:
			if line != "first line of one/web\n" {
				t.Fatalf("first chunk %q", line)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the first chunk did not arrive before the kubelet sent the rest: not flushed")
		}
		close(kubelet.release)
		rest, err := io.ReadAll(lines)
		if err != nil || string(rest) != "second line of one/web\n" {
			t.Fatalf("rest %q: %v", rest, err)
		}
		if u, _ := kubelet.last(); u.Query().Get("follow") != "true" {
			t.Fatalf("kubelet asked %v", u)
		}
	})

	refused := []struct {
		name  string
		pod   string
		opts  *corev1.PodLogOptions
		check func(error) bool
		msg   string
	}{
		{"SeveralContainersNeedAName", "two", &corev1.PodLogOptions{}, apierrors.IsBadRequest, "a container name must be specified for pod two, choose one of: [a b]"},
		{"UnknownContainerIs400", "one", &corev1.PodLogOptions{Container: "nope"}, apierrors.IsBadRequest, "container nope is not valid for pod one"},
		{"PodWithoutNodeIs400", "pending", &corev1.PodLogOptions{}, apierrors.IsBadRequest, "pod pending does not have a host assigned"},
		{"MissingPodIs404", "nope", &corev1.PodLogOptions{}, apierrors.IsNotFound, `pods "nope" not found`},
		{"NegativeTailLinesIs422", "one", &corev1.PodLogOptions{TailLines: ptr.To[int64](-1)}, apierrors.IsInvalid, "tailLines"},
		{"KubeletBadRequestIsPassedOn", "waiting", &corev1.PodLogOptions{}, apierrors.IsBadRequest, `container "web" in pod "waiting" is waiting to start: ContainerCreating`},
		{"KubeletNotFoundIsPassedOn", "gone", &corev1.PodLogOptions{}, apierrors.IsNotFound, "pods/log gone"},
	}
	// Errors are read as kubectl logs reads them: Stream decodes the
	// Status (DoRaw does not).
	logErr := func(cs kubernetes.Interface, pod string, opts *corev1.PodLogOptions) error {
		stream, err := cs.CoreV1().Pods("team").GetLogs(pod, opts).Stream(ctx)
		if err == nil {
			stream.Close()
		}
		return err
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			err := logErr(cs, tt.pod, tt.opts)
			if !tt.check(err) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("log of %s: %v, want %q", tt.pod, err, tt.msg)
			}
		})
	}

	t.Run("BadNumberIs400", func(t *testing.T) {
		err := cs.CoreV1().RESTClient().Get().Namespace("team").Resource("pods").Name("one").SubResource("log").Param("tailLines", "ten").Do(ctx).Error()
		if !apierrors.IsBadRequest(err) {
			t.Fatalf("tailLines=ten: %v, want 400", err)
		}
	})

	t.Run("NoKubeletCertificateIs503", func(t *testing.T) {
		err := logErr(c.client(0), "one", &corev1.PodLogOptions{})
		if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), "KubeletClientTLS") {
			t.Fatalf("log through a server without a kubelet certificate: %v, want 503", err)
		}
	})
}

func TestPodLogOptionsBecomeTheKubeletQuery(t *testing.T) {
	tests := []struct {
		query string
		want  string // the kubelet's query; empty when refused
		check func(error) bool
	}{
		{"", "", nil},
		{"container=web&follow=true&previous=1&timestamps=false", "follow=true&previous=true", nil},
		{"sinceTime=2026-01-02T03:04:05%2B01:00", "sinceTime=2026-01-02T02%3A04%3A05Z", nil},
		{"sinceSeconds=5&tailLines=0&limitBytes=1", "limitBytes=1&sinceSeconds=5&tailLines=0", nil},
		{"sinceSeconds=5&sinceTime=2026-01-02T03:04:05Z", "", apierrors.IsInvalid},
		{"sinceSeconds=0", "", apierrors.IsInvalid},
		{"limitBytes=0", "", apierrors.IsInvalid},
		{"follow=maybe", "", apierrors.IsBadRequest},
		{"sinceTime=yesterday", "", apierrors.IsBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			opts, err := parsePodLogOptions(q, "p")
			if tt.check != nil {
				if !tt.check(err) {
					t.Fatalf("error %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := opts.kubeletQuery().Encode(); got != tt.want {
				t.Fatalf("kubelet query %q, want %q", got, tt.want)
			}
		})
	}
}
