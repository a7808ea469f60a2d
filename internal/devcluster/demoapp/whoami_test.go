package demoapp

import (
	"bytes"
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// WhoAmI presents the pod's token to the kubernetes Service's address,
// trusting only the pod's ca.crt, and prints the user the API names.
func TestWhoAmIAsksTheAPIWithThePodsCredentials(t *testing.T) {
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/apis/authentication.k8s.io/v1/selfsubjectreviews" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if r.Header.Get("Authorization") != "Bearer the-token" {
			http.Error(w, `{"kind":"Status","code":401}`, http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"kind":"SelfSubjectReview","status":{"userInfo":{"username":"system:serviceaccount:team:robot"}}}`))
	}))
	defer api.Close()
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})
	for name, data := range map[string][]byte{"token": []byte("the-token\n"), "ca.crt": ca, "namespace": []byte("team")} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(api.URL, "https://"))
	t.Setenv("KUBERNETES_SERVICE_HOST", host)
	t.Setenv("KUBERNETES_SERVICE_PORT", port)
	var out bytes.Buffer
	if err := WhoAmI(context.Background(), dir, 0, &out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "user system:serviceaccount:team:robot namespace team\n" {
		t.Errorf("printed %q", got)
	}

	// A wrong token is an error that says what the API answered.
	os.WriteFile(filepath.Join(dir, "token"), []byte("stale"), 0o644)
	if err := WhoAmI(context.Background(), dir, 0, &out); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("with a wrong token: %v", err)
	}
	// Without the Service's variables it says so.
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if err := WhoAmI(context.Background(), dir, time.Second, &out); err == nil || !strings.Contains(err.Error(), "KUBERNETES_SERVICE_HOST") {
		t.Errorf("without the Service's variables: %v", err)
	}
}
