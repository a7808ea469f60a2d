package authn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"cairn/internal/pki"
)

func TestTokenFileFormat(t *testing.T) {
	good := "# comment\nabc,alice,1,\"dev,ops\"\nxyz,bob,2\n"
	tf, err := ParseTokenFile(strings.NewReader(good), "tokens.csv")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		header string
		user   string
		groups string
		ok     bool
		err    error
	}{
		{"Bearer abc", "alice", "dev,ops", true, nil},
		{"bearer xyz", "bob", "", true, nil},
		{"Bearer nope", "", "", false, ErrInvalidToken},
		{"Basic abc", "", "", false, nil},
		{"", "", "", false, nil},
	} {
		t.Run(tc.header, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			u, ok, err := tf.Authenticate(r)
			if ok != tc.ok || !errors.Is(err, tc.err) {
				t.Fatalf("ok=%v err=%v", ok, err)
			}
			if ok && (u.Name != tc.user || strings.Join(u.Groups, ",") != tc.groups) {
				t.Fatalf("user %+v", u)
			}
		})
	}
	for _, bad := range []string{"abc,alice\n", ",alice,1\n", "a,b,1\na,c,2\n"} {
		if _, err := ParseTokenFile(strings.NewReader(bad), "bad.csv"); err == nil {
			t.Errorf("token file %q accepted", bad)
		}
	}
}

func TestClientCertificateGivesUserAndGroups(t *testing.T) {
	dir := t.TempDir()
	if err := pki.Init(dir); err != nil {
		t.Fatal(err)
	}
	ca, _ := pki.LoadCA(dir)
	serving, err := ca.ServerConfig("api", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	serving.ClientAuth = tls.VerifyClientCertIfGiven
	chain := Chain{ClientCert{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok, err := chain.Authenticate(r)
		if !ok || err != nil {
			http.Error(w, fmt.Sprint("anonymous ", err), http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "%s %s", u.Name, strings.Join(u.Groups, ","))
	}))
	srv.TLS = serving
	srv.StartTLS()
	defer srv.Close()

	admin, err := pki.ClientConfig(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	get := func(cfg *tls.Config) (int, string) {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b := new(strings.Builder)
		_, _ = fmt.Fprint(b, readAll(resp))
		return resp.StatusCode, b.String()
	}
	if code, body := get(admin); code != 200 || body != "cairn-admin system:masters,system:authenticated" {
		t.Fatalf("admin: %d %q", code, body)
	}
	noCert := &tls.Config{RootCAs: ca.Pool()}
	if code, _ := get(noCert); code != http.StatusUnauthorized {
		t.Fatalf("no certificate: %d, want 401", code)
	}
}

func readAll(resp *http.Response) string {
	var sb strings.Builder
	buf := make([]byte, 512)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			return sb.String()
		}
	}
}
