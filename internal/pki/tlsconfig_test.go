package pki

import (
	"crypto/tls"
	"path/filepath"
	"strings"
	"testing"
)

func TestTLSConfigsAcceptTheClusterAndRefuseOthers(t *testing.T) {
	ca, dir := newTestCA(t)
	otherCA, otherDir := newTestCA(t)

	serverCfg, err := ca.ServerConfig("s1", []string{"s1.example", "127.0.0.11"})
	if err != nil {
		t.Fatal(err)
	}
	peerServer, peerClient, err := ca.PeerConfigs("s1", []string{"127.0.0.11"})
	if err != nil {
		t.Fatal(err)
	}
	_, otherPeerClient, err := otherCA.PeerConfigs("s9", nil)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := ClientConfig(filepath.Join(dir, CACertFile), filepath.Join(dir, AdminCertFile), filepath.Join(dir, AdminKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	noCert, err := ClientConfig(filepath.Join(dir, CACertFile), "", "")
	if err != nil {
		t.Fatal(err)
	}
	// A client that trusts our CA but holds a certificate from another one:
	// the refusal must come from the server and say why.
	foreignAdmin, err := ClientConfig(filepath.Join(dir, CACertFile), filepath.Join(otherDir, AdminCertFile), filepath.Join(otherDir, AdminKeyFile))
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name          string
		server        *tls.Config
		client        *tls.Config
		wantServerErr string // in Describe(server error); "" means accepted
		wantClientErr string // in Describe(client error)
	}{
		{name: "admin on the client port", server: serverCfg, client: admin},
		{
			// Peer configurations dial peer ports only: a serving
			// certificate without O=cairn:peers is not a replica.
			name: "peer dialing a client port", server: serverCfg, client: peerClient,
			wantServerErr: "refused our certificate",
			wantClientErr: "not a peer certificate (O=cairn:peers missing; got CN=s1)",
		},
		{name: "peer on the peer port", server: peerServer, client: peerClient},
		{name: "server dialing another server's client port", server: serverCfg, client: serverCfg},
		{
			name: "client without a certificate", server: serverCfg, client: noCert,
			wantServerErr: "no client certificate presented",
		},
		{
			name: "client certificate from another CA", server: serverCfg, client: foreignAdmin,
			wantServerErr: "certificate signed by a different CA",
		},
		{
			name: "admin on the peer port", server: peerServer, client: admin,
			wantServerErr: "not a peer certificate (O=cairn:peers missing",
		},
		{
			name: "peer of another cluster", server: peerServer, client: otherPeerClient,
			wantServerErr: "refused our certificate (different CA",
			wantClientErr: "certificate signed by a different CA",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := tt.client.Clone()
			client.ServerName = "127.0.0.1"
			serverErr, clientErr := handshake(t, tt.server, client)
			check := func(side string, err error, want string) {
				t.Helper()
				switch {
				case want == "" && err != nil:
					t.Errorf("%s failed: %v (%s)", side, err, Describe(err))
				case want != "" && err == nil:
					t.Errorf("%s succeeded, want %q", side, want)
				case want != "" && !strings.Contains(Describe(err), want):
					t.Errorf("%s: Describe(%v) = %q, want it to contain %q", side, err, Describe(err), want)
				}
			}
			check("server", serverErr, tt.wantServerErr)
			if tt.wantServerErr == "" || tt.wantClientErr != "" {
				check("client", clientErr, tt.wantClientErr)
			} else if clientErr == nil {
				t.Error("client was not told it was refused")
			}
		})
	}
}

func TestServerCertificatesNameAdvertisedHostsAndLoopback(t *testing.T) {
	ca, _ := newTestCA(t)
	cfg, err := ca.ServerConfig("s1", []string{"s1.example", "127.0.0.11:2379"})
	if err != nil {
		t.Fatal(err)
	}
	leaf := cfg.Certificates[0].Leaf
	for _, host := range []string{"s1.example", "localhost", "127.0.0.11", "127.0.0.1"} {
		if err := leaf.VerifyHostname(host); err != nil {
			t.Errorf("serving certificate not valid for %s: %v", host, err)
		}
	}
	if cfg.ClientAuth != tls.RequireAndVerifyClientCert || cfg.MinVersion != tls.VersionTLS12 {
		t.Errorf("ClientAuth %v MinVersion %x, want RequireAndVerifyClientCert and TLS 1.2", cfg.ClientAuth, cfg.MinVersion)
	}
}

func TestClientConfigErrors(t *testing.T) {
	_, dir := newTestCA(t)
	tests := []struct {
		name                      string
		caFile, certFile, keyFile string
		wantErr                   string
	}{
		{"no CA", "", "", "", "pass --cacert"},
		{"cert without key", filepath.Join(dir, CACertFile), filepath.Join(dir, AdminCertFile), "", "both --cert and --key"},
		{"CA file missing", filepath.Join(dir, "nope.crt"), "", "", "reading CA certificate"},
		{"CA file is a key", filepath.Join(dir, CAKeyFile), "", "", "holds no PEM certificate"},
		{"key does not match", filepath.Join(dir, CACertFile), filepath.Join(dir, AdminCertFile), filepath.Join(dir, CAKeyFile), "loading client certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ClientConfig(tt.caFile, tt.certFile, tt.keyFile)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
