package pki

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestInitWritesCAAndAdminCertWithPrivateKeys(t *testing.T) {
	ca, dir := newTestCA(t)

	perms := map[string]os.FileMode{
		CACertFile:    0o644,
		CAKeyFile:     0o600,
		AdminCertFile: 0o644,
		AdminKeyFile:  0o600,
	}
	for name, want := range perms {
		t.Run(name, func(t *testing.T) {
			fi, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != want {
				t.Errorf("mode %v, want %v", got, want)
			}
		})
	}

	if ca.Cert.Subject.CommonName != CACommonName || !ca.Cert.IsCA {
		t.Errorf("CA subject %v IsCA=%v, want CN=%s and a CA", ca.Cert.Subject, ca.Cert.IsCA, CACommonName)
	}
	if years := ca.Cert.NotAfter.Sub(ca.Cert.NotBefore).Hours() / 24 / 365; years < 9.9 {
		t.Errorf("CA valid for %.1f years, want 10", years)
	}

	adminPEM, err := os.ReadFile(filepath.Join(dir, AdminCertFile))
	if err != nil {
		t.Fatal(err)
	}
	admin := parseLeaf(t, adminPEM)
	if admin.Subject.CommonName != AdminCommonName || !slices.Equal(admin.Subject.Organization, []string{AdminOrganization}) {
		t.Errorf("admin subject %v, want CN=%s O=%s", admin.Subject, AdminCommonName, AdminOrganization)
	}
	if _, err := admin.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin certificate does not verify as a client of the CA: %v", err)
	}
	if _, err := admin.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("admin certificate verifies as a server certificate; want client only")
	}
}

func TestInitRefusesToOverwriteAnExistingCluster(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string)
		wantErr string
	}{
		{
			name: "dir already holds a CA",
			prepare: func(t *testing.T, dir string) {
				if err := Init(dir); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "already holds a CA; use another --dir or delete it",
		},
		{
			name: "stray key without a CA certificate",
			prepare: func(t *testing.T, dir string) {
				if err := os.WriteFile(filepath.Join(dir, AdminKeyFile), []byte("precious"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "admin.key already exists",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.prepare(t, dir)
			before := readDir(t, dir)

			err := Init(dir)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Init error %v, want one containing %q", err, tt.wantErr)
			}
			after := readDir(t, dir)
			if len(after) != len(before) {
				t.Errorf("Init left files %v, had %v", keys(after), keys(before))
			}
			for name, data := range before {
				if !bytes.Equal(after[name], data) {
					t.Errorf("Init changed %s", name)
				}
			}
		})
	}
}

func TestLoadCAErrorsTellWhatToDo(t *testing.T) {
	_, other := newTestCA(t)
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string)
		wantErr string
	}{
		{
			name:    "empty dir",
			prepare: func(*testing.T, string) {},
			wantErr: "run `cairn pki init --dir",
		},
		{
			name: "key missing",
			prepare: func(t *testing.T, dir string) {
				copyFile(t, filepath.Join(other, CACertFile), filepath.Join(dir, CACertFile))
			},
			wantErr: "ca.key not found: run `cairn pki init --dir",
		},
		{
			name: "key from another PKI dir",
			prepare: func(t *testing.T, dir string) {
				if err := Init(dir); err != nil {
					t.Fatal(err)
				}
				copyFile(t, filepath.Join(other, CAKeyFile), filepath.Join(dir, CAKeyFile))
			},
			wantErr: "does not belong to",
		},
		{
			name: "leaf certificate in place of the CA",
			prepare: func(t *testing.T, dir string) {
				copyFile(t, filepath.Join(other, AdminCertFile), filepath.Join(dir, CACertFile))
				copyFile(t, filepath.Join(other, AdminKeyFile), filepath.Join(dir, CAKeyFile))
			},
			wantErr: "is not a CA certificate",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.prepare(t, dir)
			_, err := LoadCA(dir)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("LoadCA error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := make(map[string][]byte)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = data
	}
	return files
}

func keys(m map[string][]byte) []string {
	var names []string
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
