package pki

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// AdminValidity is how long the admin client certificate written by Init is valid.
const AdminValidity = 365 * 24 * time.Hour

// Init creates dir and writes a new cluster CA and an admin client
// certificate into it. It never overwrites: a dir that already holds a CA
// belongs to a cluster, and replacing its CA would lock every member out.
func Init(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, CACertFile)); err == nil {
		return fmt.Errorf("pki: %s already holds a CA; use another --dir or delete it to start a new cluster", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	ca, caKeyPEM, err := newCA(time.Now())
	if err != nil {
		return err
	}
	adminCert, adminKey, err := ca.Issue(CertRequest{
		CommonName:   AdminCommonName,
		Organization: []string{AdminOrganization},
		Client:       true,
		Validity:     AdminValidity,
	})
	if err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
		perm os.FileMode
	}{
		// The CA key goes first: if it cannot be written, no half-made
		// CA (a ca.crt without its key) is left behind to block a retry.
		{CAKeyFile, caKeyPEM, 0o600},
		{AdminKeyFile, adminKey, 0o600},
		{AdminCertFile, adminCert, 0o644},
		{CACertFile, ca.CertPEM, 0o644},
	}
	var written []string
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		if err := writeNewFile(path, f.data, f.perm); err != nil {
			for _, w := range written {
				os.Remove(w)
			}
			return err
		}
		written = append(written, path)
	}
	return nil
}

// writeNewFile writes a file that must not exist yet, with exactly perm
// whatever the umask, so keys are never readable by others even briefly.
func writeNewFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("pki: %s already exists; use another --dir or delete it to start a new cluster", path)
	}
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("pki: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("pki: writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("pki: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return fmt.Errorf("pki: writing %s: %w", path, err)
	}
	return nil
}
