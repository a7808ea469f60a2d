package demoapp

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ServiceAccountDir is where a pod finds its service account's token, the
// cluster CA and its namespace.
const ServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// WhoAmI asks the API server, as an in-cluster client does (the
// kubernetes Service from KUBERNETES_SERVICE_HOST and _PORT, the
// credentials in dir), who this pod's token identifies, and writes
// "user NAME namespace NS" to w. Connection failures are retried for
// retryFor.
func WhoAmI(ctx context.Context, dir string, retryFor time.Duration, w io.Writer) error {
	read := func(name string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("the pod's service account credentials: %w", err)
		}
		return bytes.TrimSpace(b), nil
	}
	token, err := read("token")
	if err != nil {
		return err
	}
	caPEM, err := read("ca.crt")
	if err != nil {
		return err
	}
	namespace, err := read("namespace")
	if err != nil {
		return err
	}
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return fmt.Errorf("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set: the pod does not see the kubernetes Service")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("%s holds no certificate", filepath.Join(dir, "ca.crt"))
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, Proxy: nil,
	}}
	url := "https://" + net.JoinHostPort(host, port) + "/apis/authentication.k8s.io/v1/selfsubjectreviews"
	body := `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
	deadline := time.Now().Add(retryFor)
	for {
		user, err := selfReview(ctx, client, url, string(token), body)
		if err == nil {
			fmt.Fprintf(w, "user %s namespace %s\n", user, namespace)
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		fmt.Fprintf(w, "retrying: %v\n", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func selfReview(ctx context.Context, client *http.Client, url, token, body string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s: %s", url, resp.Status, bytes.TrimSpace(b))
	}
	var review struct {
		Status struct {
			UserInfo struct {
				Username string `json:"username"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if err := json.Unmarshal(b, &review); err != nil {
		return "", fmt.Errorf("%s: %w", url, err)
	}
	return review.Status.UserInfo.Username, nil
}
