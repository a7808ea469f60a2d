package linearizability

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestProbeStorePortFindsMissingALPN(t *testing.T) {
	tests := []struct {
		name   string
		http2  bool // whether the server offers ALPN h2
		failed bool
	}{
		{"offers h2", true, false},
		{"offers only http/1.1", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(http.NotFoundHandler())
			srv.EnableHTTP2 = tt.http2
			srv.StartTLS()
			defer srv.Close()
			cfg := srv.Client().Transport.(*http.Transport).TLSClientConfig
			msg := probeStorePort(srv.Listener.Addr().String(), cfg)
			if (msg != "") != tt.failed {
				t.Errorf("probeStorePort = %q, want a complaint: %v", msg, tt.failed)
			}
		})
	}
}
