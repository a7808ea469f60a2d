package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"cairn/internal/pki"
)

// JoinServer prepares a server joining through the API server at
// apiServer with tok: it fetches the CA bundle into pkiDir (ca.crt and
// ca.key, kept when pkiDir already holds this very CA) and returns the
// store members to join through, the answering server's first.
func JoinServer(ctx context.Context, apiServer string, tok Token, pkiDir string) ([]StoreMember, error) {
	if have, err := pki.LoadCA(pkiDir); err == nil {
		if have.Fingerprint() != tok.CAHash {
			return nil, fmt.Errorf("bootstrap: %s already holds another cluster's CA (sha256 %s…, the token pins %s…): use an empty --pki-dir",
				pkiDir, have.Fingerprint()[:16], tok.CAHash[:16])
		}
	}
	c, err := Connect(ctx, apiServer, tok)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	b, err := c.ServerBundle(ctx)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(bytes.TrimSpace([]byte(b.CACert)), bytes.TrimSpace(c.CAPEM())) {
		return nil, errors.New("bootstrap: the server bundle's CA is not the one /cacerts served")
	}
	if err := writeCA(pkiDir, []byte(b.CACert), []byte(b.CAKey)); err != nil {
		return nil, err
	}
	if _, err := pki.LoadCA(pkiDir); err != nil {
		return nil, fmt.Errorf("bootstrap: the CA bundle received is unusable: %w", err)
	}
	return b.StoreMembers, nil
}

// writeCA writes the CA into dir, the key first so that a half-written
// dir never holds a certificate without its key.
func writeCA(dir string, certPEM, keyPEM []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, pki.CAKeyFile), keyPEM, 0o600); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, pki.CACertFile), certPEM, 0o644)
}
