package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"

	"cairn/apiserver/storage"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// execQueryKeys are the PodExecOptions passed on to the kubelet.
var execQueryKeys = []string{"command", "stdin", "stdout", "stderr", "tty"}

// servePodExec serves pods/NAME/exec (GET for websockets, POST for SPDY)
// by proxying the upgraded connection to the kubelet of the pod's node,
// as kube-apiserver does:
//
//	https://<node address>:<kubelet port>/exec/NS/POD/CONTAINER?command=sh&stdin=true...
//
// kubectl exec then speaks the remote command protocol with the kubelet
// through this server.
func servePodExec(h *restHandler, w http.ResponseWriter, r *http.Request, info requestInfo) error {
	return serveRemoteCommand(h, w, r, info, "exec")
}

// servePodAttach serves pods/NAME/attach as servePodExec serves exec,
// at the kubelet's /attach/NS/POD/CONTAINER, with no command.
func servePodAttach(h *restHandler, w http.ResponseWriter, r *http.Request, info requestInfo) error {
	return serveRemoteCommand(h, w, r, info, "attach")
}

func serveRemoteCommand(h *restHandler, w http.ResponseWriter, r *http.Request, info requestInfo, verb string) error {
	if info.Verb != "get" && info.Verb != "create" {
		return apierrors.NewMethodNotSupported(h.res.GVR.GroupResource(), info.Verb+" "+verb)
	}
	q := r.URL.Query()
	if verb == "exec" && len(q["command"]) == 0 {
		return apierrors.NewBadRequest("you must specify at least one command for the container")
	}
	for _, key := range []string{"stdin", "stdout", "stderr", "tty"} {
		if v := q.Get(key); v != "" {
			if _, err := strconv.ParseBool(v); err != nil {
				return apierrors.NewBadRequest(fmt.Sprintf("invalid %s %q: must be true or false", key, v))
			}
		}
	}
	pod, err := h.streamPod(r, info)
	if err != nil {
		return err
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return apierrors.NewBadRequest(fmt.Sprintf("cannot %s into a container in a completed pod; current phase is %s", verb, pod.Status.Phase))
	}
	container, err := logContainer(pod, q.Get("container"))
	if err != nil {
		return err
	}
	kq := url.Values{}
	for _, key := range execQueryKeys {
		if vs, ok := q[key]; ok && (key != "command" || verb == "exec") {
			kq[key] = vs
		}
	}
	return h.s.proxyToKubelet(w, r, pod, fmt.Sprintf("/%s/%s/%s/%s", verb, pod.Namespace, pod.Name, container), kq)
}

// servePodPortForward serves pods/NAME/portforward by proxying the
// upgraded connection to the pod's kubelet, at /portForward/NS/POD.
func servePodPortForward(h *restHandler, w http.ResponseWriter, r *http.Request, info requestInfo) error {
	if info.Verb != "get" && info.Verb != "create" {
		return apierrors.NewMethodNotSupported(h.res.GVR.GroupResource(), info.Verb+" portforward")
	}
	q := r.URL.Query()
	for _, p := range q["ports"] {
		for _, one := range strings.Split(p, ",") {
			if n, err := strconv.ParseUint(one, 10, 16); err != nil || n == 0 {
				return apierrors.NewBadRequest(fmt.Sprintf("invalid port %q: must be between 1 and 65535", one))
			}
		}
	}
	pod, err := h.streamPod(r, info)
	if err != nil {
		return err
	}
	if pod.Status.Phase != corev1.PodRunning {
		return apierrors.NewBadRequest(fmt.Sprintf("pod %s is not running; current phase is %s", pod.Name, pod.Status.Phase))
	}
	kq := url.Values{}
	if ports, ok := q["ports"]; ok {
		kq["port"] = ports
	}
	return h.s.proxyToKubelet(w, r, pod, fmt.Sprintf("/portForward/%s/%s", pod.Namespace, pod.Name), kq)
}

// streamPod reads the pod a streaming subresource is about, which must
// be on a node this server can reach. (Whether the user may is decided
// before: nodes, for one, may not; see authorizeNode.)
func (h *restHandler) streamPod(r *http.Request, info requestInfo) (*corev1.Pod, error) {
	obj, err := h.store.Get(r.Context(), h.key(info.Namespace, info.Name), storage.GetOptions{})
	if err != nil {
		return nil, err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("pods/%s of a %T", info.Subresource, obj))
	}
	if pod.Spec.NodeName == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	if h.s.cfg.KubeletClientTLS == nil {
		return nil, apierrors.NewServiceUnavailable("this API server has no kubelet client certificate (KubeletClientTLS) to reach the nodes with")
	}
	return pod, nil
}

// proxyToKubelet passes the request, an upgrade to a websocket or SPDY,
// to path on the pod's kubelet with the API server's own client
// certificate, then copies the upgraded connection both ways until
// either side closes it. The client's credentials stay here. A refusal
// by the kubelet reaches the client as a Status, which kubectl prints.
func (s *Server) proxyToKubelet(w http.ResponseWriter, r *http.Request, pod *corev1.Pod, path string, query url.Values) error {
	host, err := s.kubeletHost(r, pod.Spec.NodeName)
	if err != nil {
		return err
	}
	loc := url.URL{Scheme: "https", Host: host, Path: path, RawQuery: query.Encode()}
	tlsConfig := s.kubeletTLS(pod.Spec.NodeName)
	// Upgrades need HTTP/1.1.
	tlsConfig.NextProtos = []string{"http/1.1"}
	transport := &http.Transport{TLSClientConfig: tlsConfig}
	defer transport.CloseIdleConnections()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = &loc
			pr.Out.Host = host
			for key := range pr.Out.Header {
				if key == "Authorization" || key == "Cookie" || strings.HasPrefix(key, "Impersonate-") {
					pr.Out.Header.Del(key)
				}
			}
		},
		Transport:     transport,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode < 400 {
				return nil
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, maxKubeletErrorBytes))
			resp.Body.Close()
			text := strings.TrimSpace(string(body))
			var err error
			switch resp.StatusCode {
			case http.StatusBadRequest:
				err = apierrors.NewBadRequest(text)
			case http.StatusNotFound:
				err = &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
					Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound, Message: text}}
			case http.StatusUnauthorized, http.StatusForbidden:
				// The kubelet refused this server, not the client.
				err = apierrors.NewServiceUnavailable(fmt.Sprintf("the kubelet of node %s refused this API server: %s", pod.Spec.NodeName, text))
			default:
				err = apierrors.NewInternalError(fmt.Errorf("the kubelet of node %s: %s", pod.Spec.NodeName, text))
			}
			status := err.(apierrors.APIStatus).Status()
			status.Kind, status.APIVersion = "Status", "v1"
			b, _ := json.Marshal(status)
			resp.StatusCode = int(status.Code)
			resp.Header = http.Header{"Content-Type": {"application/json"}}
			resp.Body = io.NopCloser(bytes.NewReader(b))
			resp.ContentLength = int64(len(b))
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			writeError(w, apierrors.NewServiceUnavailable(fmt.Sprintf("reaching the kubelet of node %s: %v", pod.Spec.NodeName, err)))
		},
	}
	rp.ServeHTTP(w, r)
	return nil
}
