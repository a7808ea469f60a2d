package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"cairn/internal/atomicfile"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// CreateToken creates a new token for the cluster whose CA has caHash.
func CreateToken(ctx context.Context, cs kubernetes.Interface, caHash string, o TokenOptions) (Token, error) {
	t, err := GenerateToken(caHash)
	if err != nil {
		return Token{}, err
	}
	if _, err := cs.CoreV1().Secrets(SecretNamespace).Create(ctx, NewTokenSecret(t, o), metav1.CreateOptions{}); err != nil {
		return Token{}, fmt.Errorf("bootstrap: creating the token's secret: %w", err)
	}
	return t, nil
}

// ListTokens lists the cluster's tokens, sorted by id. Malformed token
// Secrets are skipped.
func ListTokens(ctx context.Context, cs kubernetes.Interface) ([]TokenInfo, error) {
	list, err := cs.CoreV1().Secrets(SecretNamespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("type", string(SecretType)).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("bootstrap: listing token secrets: %w", err)
	}
	var out []TokenInfo
	for i := range list.Items {
		s := &list.Items[i]
		// The field selector is a hint some servers ignore.
		if !secretIsToken(s) {
			continue
		}
		if info, _, err := ReadTokenSecret(s); err == nil {
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// DeleteToken deletes the token with id (an id, id.secret or a whole
// join token are all accepted), which no joiner can use afterwards.
func DeleteToken(ctx context.Context, cs kubernetes.Interface, id string) error {
	id = TokenIDOf(id)
	err := cs.CoreV1().Secrets(SecretNamespace).Delete(ctx, SecretName(id), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("bootstrap: no token with id %q (see `cairn token list`)", id)
	}
	if err != nil {
		return fmt.Errorf("bootstrap: deleting token %s: %w", id, err)
	}
	return nil
}

// TokenIDOf returns the id of s, which may be an id, an id.secret
// bootstrap token or a whole join token.
func TokenIDOf(s string) string {
	if t, err := ParseToken(s); err == nil {
		return t.ID
	}
	if id, _, ok := ParseBearer(s); ok {
		return id
	}
	return s
}

// EnsureServerToken makes sure path holds a join token with server-join
// permission, 0600. When path is missing it writes the cluster's default
// server token (ServerTokenID), creating its Secret if no server did yet.
// The default server token never expires, as k3s's server token.
func EnsureServerToken(ctx context.Context, cs kubernetes.Interface, caHash, path string) (Token, error) {
	if b, err := os.ReadFile(path); err == nil {
		t, err := ParseToken(string(b))
		if err != nil {
			return Token{}, fmt.Errorf("bootstrap: %s: %w", path, err)
		}
		return t, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return Token{}, fmt.Errorf("bootstrap: %w", err)
	}
	secrets := cs.CoreV1().Secrets(SecretNamespace)
	id := ServerTokenID(caHash)
	var t Token
	for attempt := 0; ; attempt++ {
		s, err := secrets.Get(ctx, SecretName(id), metav1.GetOptions{})
		if err == nil {
			info, secret, err := ReadTokenSecret(s)
			if err != nil {
				return Token{}, err
			}
			if info.Expired(time.Now()) || !info.Server() {
				return Token{}, fmt.Errorf("bootstrap: the default server token %s was changed (expired or without server permission): delete it with `cairn token delete %s` to have a new one made", id, id)
			}
			t = Token{CAHash: caHash, ID: id, Secret: secret}
			break
		}
		if !apierrors.IsNotFound(err) || attempt > 0 {
			return Token{}, fmt.Errorf("bootstrap: reading the default server token: %w", err)
		}
		secret, err := randomString(16)
		if err != nil {
			return Token{}, err
		}
		t = Token{CAHash: caHash, ID: id, Secret: secret}
		_, err = secrets.Create(ctx, NewTokenSecret(t, TokenOptions{Server: true,
			Description: "default server join token, written to every server's DATA/token"}), metav1.CreateOptions{})
		if err == nil {
			break
		}
		// Another server created it first: use theirs.
		if !apierrors.IsAlreadyExists(err) {
			return Token{}, fmt.Errorf("bootstrap: creating the default server token: %w", err)
		}
	}
	if err := writeFileAtomic(path, []byte(t.String()+"\n"), 0o600); err != nil {
		return Token{}, err
	}
	return t, nil
}

// writeFileAtomic writes path, and the directories above it, so that
// readers never see half a file and a crash keeps the old or the new.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	return atomicfile.Write(path, data, perm, true)
}

// secretIsToken reports whether s is a token Secret by name and type.
func secretIsToken(s *corev1.Secret) bool {
	return s.Namespace == SecretNamespace && s.Type == SecretType && strings.HasPrefix(s.Name, SecretNamePrefix)
}
