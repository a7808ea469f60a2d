package apiserver

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"cairn/apiserver/storage"
	"cairn/internal/bootstrap"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// defaultKubeletPort is where a kubelet serves its HTTPS API when its node
// does not say (status.daemonEndpoints.kubeletEndpoint.port).
const defaultKubeletPort = 10250

// maxKubeletErrorBytes bounds what is read of a kubelet's error answer.
const maxKubeletErrorBytes = 1 << 20

var podLogResource = schema.GroupResource{Resource: "pods/log"}

// servePodLog serves GET pods/NAME/log by proxying to the kubelet of the
// pod's node, at its containerLogs endpoint, as kube-apiserver does:
//
//	https://<node address>:<kubelet port>/containerLogs/NS/POD/CONTAINER?follow=true&tailLines=10...
//
// The body streams through as the kubelet writes it, so `kubectl logs -f`
// sees lines as they come.
func servePodLog(h *restHandler, w http.ResponseWriter, r *http.Request, info requestInfo) error {
	if info.Verb != "get" {
		return apierrors.NewMethodNotSupported(h.res.GVR.GroupResource(), info.Verb+" log")
	}
	opts, err := parsePodLogOptions(r.URL.Query(), info.Name)
	if err != nil {
		return err
	}
	ctx := r.Context()
	obj, err := h.store.Get(ctx, h.key(info.Namespace, info.Name), storage.GetOptions{})
	if err != nil {
		return err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("pods/log of a %T", obj))
	}
	container, err := logContainer(pod, opts.container)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	if h.s.cfg.KubeletClientTLS == nil {
		return apierrors.NewServiceUnavailable("pod logs are unavailable: this API server has no kubelet client certificate (KubeletClientTLS) to reach the nodes with")
	}
	host, err := h.s.kubeletHost(r, pod.Spec.NodeName)
	if err != nil {
		return err
	}
	loc := url.URL{
		Scheme:   "https",
		Host:     host,
		Path:     fmt.Sprintf("/containerLogs/%s/%s/%s", pod.Namespace, pod.Name, container),
		RawQuery: opts.kubeletQuery().Encode(),
	}
	return h.s.proxyLog(w, r, loc, pod.Spec.NodeName, pod.Name, opts.limitBytes)
}

// podLogOptions are the query parameters of pods/log (PodLogOptions).
type podLogOptions struct {
	container                    string
	follow, previous, timestamps bool
	sinceSeconds, tailLines      *int64
	sinceTime                    *time.Time
	limitBytes                   *int64
}

// parsePodLogOptions reads and checks the query as Kubernetes validates
// PodLogOptions: numbers must parse (400), and be in range (422).
func parsePodLogOptions(q url.Values, name string) (podLogOptions, error) {
	o := podLogOptions{container: q.Get("container")}
	var bad []string
	flag := func(key string) bool {
		v := q.Get(key)
		if v == "" {
			return false
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad = append(bad, key)
		}
		return b
	}
	number := func(key string) *int64 {
		v := q.Get(key)
		if v == "" {
			return nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			bad = append(bad, key)
			return nil
		}
		return &n
	}
	o.follow, o.previous, o.timestamps = flag("follow"), flag("previous"), flag("timestamps")
	o.sinceSeconds, o.tailLines, o.limitBytes = number("sinceSeconds"), number("tailLines"), number("limitBytes")
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			bad = append(bad, "sinceTime")
		}
		o.sinceTime = &t
	}
	if len(bad) > 0 {
		return o, apierrors.NewBadRequest(fmt.Sprintf("invalid pods/log query parameters: %s", strings.Join(bad, ", ")))
	}
	var errs field.ErrorList
	if o.tailLines != nil && *o.tailLines < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *o.tailLines, "must be greater than or equal to 0"))
	}
	if o.limitBytes != nil && *o.limitBytes < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *o.limitBytes, "must be greater than 0"))
	}
	if o.sinceSeconds != nil && *o.sinceSeconds < 1 {
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *o.sinceSeconds, "must be greater than 0"))
	}
	if o.sinceSeconds != nil && o.sinceTime != nil {
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	}
	if len(errs) > 0 {
		return o, apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, name, errs)
	}
	return o, nil
}

// kubeletQuery is the query of the kubelet's containerLogs endpoint,
// which takes PodLogOptions' names.
func (o podLogOptions) kubeletQuery() url.Values {
	q := url.Values{}
	for key, on := range map[string]bool{"follow": o.follow, "previous": o.previous, "timestamps": o.timestamps} {
		if on {
			q.Set(key, "true")
		}
	}
	for key, n := range map[string]*int64{"sinceSeconds": o.sinceSeconds, "tailLines": o.tailLines, "limitBytes": o.limitBytes} {
		if n != nil {
			q.Set(key, strconv.FormatInt(*n, 10))
		}
	}
	if o.sinceTime != nil {
		q.Set("sinceTime", o.sinceTime.UTC().Format(time.RFC3339))
	}
	return q
}

// logContainer picks the container whose log is asked for: the one named,
// which must be the pod's, or else the pod's only container.
func logContainer(pod *corev1.Pod, name string) (string, error) {
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	if name != "" {
		for _, n := range names {
			if n == name {
				return name, nil
			}
		}
		return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
	}
	switch len(pod.Spec.Containers) {
	case 1:
		return pod.Spec.Containers[0].Name, nil
	case 0:
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", pod.Name, names))
}

// kubeletHost is host:port of the kubelet of node: its InternalIP (Cairn
// nodes register one; names may not resolve from the control plane),
// else its ExternalIP, else its host name, and its kubelet port.
func (s *Server) kubeletHost(r *http.Request, node string) (string, error) {
	h, ok := s.handlers[corev1.SchemeGroupVersion.WithResource("nodes")]
	if !ok {
		return "", apierrors.NewServiceUnavailable("nodes are not served")
	}
	obj, err := h.store.Get(r.Context(), h.key("", node), storage.GetOptions{ResourceVersion: "0"})
	if err != nil {
		return "", err
	}
	n, ok := obj.(*corev1.Node)
	if !ok {
		return "", apierrors.NewInternalError(fmt.Errorf("node %s is a %T", node, obj))
	}
	addr := nodeAddress(n)
	if addr == "" {
		return "", apierrors.NewBadRequest(fmt.Sprintf("node %s has no address to reach its kubelet at", node))
	}
	port := int(n.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if port == 0 {
		port = defaultKubeletPort
	}
	return net.JoinHostPort(addr, strconv.Itoa(port)), nil
}

// nodeAddress is the first address of n in the order kubeletHost uses.
func nodeAddress(n *corev1.Node) string {
	for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeInternalDNS, corev1.NodeHostName} {
		for _, a := range n.Status.Addresses {
			if a.Type == t && a.Address != "" {
				return a.Address
			}
		}
	}
	return ""
}

// proxyLog streams the kubelet's answer at loc to w, flushing each chunk
// as it arrives. A kubelet error becomes the API error of its status code,
// with its body as the message, as Kubernetes reports it.
func (s *Server) proxyLog(w http.ResponseWriter, r *http.Request, loc url.URL, node, pod string, limit *int64) error {
	transport := &http.Transport{TLSClientConfig: s.kubeletTLS(node), ForceAttemptHTTP2: true}
	defer transport.CloseIdleConnections()
	client := &http.Client{
		Transport: transport,
		// A kubelet never redirects; following one would carry the
		// API server's client certificate elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("apiserver: the kubelet redirected a log request")
		},
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, loc.String(), nil)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("reaching the kubelet: %w", err))
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxKubeletErrorBytes))
		return kubeletError(resp.StatusCode, pod, strings.TrimSpace(string(body)))
	}
	var body io.Reader = resp.Body
	if limit != nil {
		body = io.LimitReader(body, *limit)
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	flush := http.NewResponseController(w).Flush
	_ = flush()
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil // the client went away
			}
			_ = flush()
		}
		if err != nil {
			// The status is sent: a broken stream can only end the body.
			return nil
		}
	}
}

// kubeletTLS is the client configuration for the kubelet of node. A
// certificate of the cluster CA for the node's address is not enough: a
// node certificate must also be node's own, so that a node that got a
// serving certificate for another's address cannot stand in for it.
// (A kubelet serving certificate of another kind, from
// --tls-cert-file, is checked by the CA and address alone.)
func (s *Server) kubeletTLS(node string) *tls.Config {
	c := s.cfg.KubeletClientTLS.Clone()
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the kubelet presented no certificate")
		}
		cn := cs.PeerCertificates[0].Subject.CommonName
		if other, ok := strings.CutPrefix(cn, bootstrap.NodeUserPrefix); ok && other != node {
			return fmt.Errorf("the kubelet of node %s presented node %s's certificate", node, other)
		}
		return nil
	}
	return c
}

// kubeletError turns a kubelet's error answer into the API error
// Kubernetes makes of it: its text becomes the message of a 400 (a
// container still waiting to start) or a 500, and a detail of the others.
func kubeletError(code int, pod, text string) error {
	switch code {
	case http.StatusBadRequest:
		return apierrors.NewBadRequest(text)
	case http.StatusInternalServerError:
		return apierrors.NewInternalError(errors.New(text))
	}
	return apierrors.NewGenericServerResponse(code, "", podLogResource, pod, text, 0, false)
}
