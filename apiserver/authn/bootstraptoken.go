package authn

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"cairn/internal/bootstrap"

	corev1 "k8s.io/api/core/v1"
)

// BootstrapTokens authenticates Kubernetes bootstrap tokens
// ("abcdef.0123456789abcdef") against their Secrets,
// kube-system/bootstrap-token-<id>, as the user system:bootstrap:<id> in the
// group system:bootstrappers plus the Secret's auth-extra-groups. Bearer
// tokens of another form, and bootstrap-shaped tokens no Secret names, go
// to Next (e.g. a token file), so both kinds of tokens work side by side.
type BootstrapTokens struct {
	// Lookup returns the token Secret with the given id, or nil when there
	// is none.
	Lookup func(ctx context.Context, id string) (*corev1.Secret, error)
	// Next authenticates everything that is not a known bootstrap token;
	// nil: nothing else.
	Next Authenticator
	// Expired is told the id of an expired token a client presented, so
	// that its Secret can be deleted; may be nil.
	Expired func(id string)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Logger records refused tokens, so that the operator of the cluster
	// sees why a join failed; may be nil.
	Logger *slog.Logger
}

// Authenticate implements Authenticator.
func (b *BootstrapTokens) Authenticate(r *http.Request) (*User, bool, error) {
	token, ok := BearerToken(r)
	if !ok {
		return b.next(r)
	}
	id, secret, ok := bootstrap.ParseBearer(token)
	if !ok {
		return b.next(r)
	}
	s, err := b.Lookup(r.Context(), id)
	if err != nil {
		return nil, false, fmt.Errorf("authn: reading bootstrap token %s: %w", id, err)
	}
	if s == nil {
		if u, ok, err := b.next(r); ok && err == nil {
			return u, true, nil
		}
		return nil, false, b.refuse(r, id, fmt.Errorf("authn: invalid bootstrap token %s: no such token, or a wrong secret (see `cairn token list`)", id))
	}
	u, err := b.check(s, id, secret)
	if err != nil {
		return nil, false, b.refuse(r, id, err)
	}
	return u, true, nil
}

// check validates a presented token against its Secret. The secret is
// compared before anything else is revealed (such as the expiry).
func (b *BootstrapTokens) check(s *corev1.Secret, id, secret string) (*User, error) {
	info, want, err := bootstrap.ReadTokenSecret(s)
	if err != nil {
		return nil, fmt.Errorf("authn: bootstrap token %s: %w", id, err)
	}
	if subtle.ConstantTimeCompare([]byte(want), []byte(secret)) != 1 {
		return nil, fmt.Errorf("authn: invalid bootstrap token %s: no such token, or a wrong secret (see `cairn token list`)", id)
	}
	if s.DeletionTimestamp != nil {
		return nil, fmt.Errorf("authn: bootstrap token %s is being deleted", id)
	}
	now := time.Now()
	if b.Now != nil {
		now = b.Now()
	}
	if info.Expired(now) {
		if b.Expired != nil {
			b.Expired(id)
		}
		return nil, fmt.Errorf("authn: bootstrap token %s expired at %s: create a new one with `cairn token create`",
			id, info.Expires.UTC().Format(time.RFC3339))
	}
	usable := false
	for _, u := range info.Usages {
		usable = usable || u == "authentication"
	}
	if !usable {
		return nil, fmt.Errorf("authn: bootstrap token %s may not be used for authentication (%s is not true)", id, bootstrap.KeyUsageAuthentication)
	}
	groups := append([]string{bootstrap.BootstrappersGroup}, info.Groups...)
	groups = append(groups, GroupAuthenticated)
	return &User{Name: bootstrap.UserPrefix + id, Groups: groups}, nil
}

func (b *BootstrapTokens) next(r *http.Request) (*User, bool, error) {
	if b.Next == nil {
		return nil, false, nil
	}
	return b.Next.Authenticate(r)
}

// refuse logs a refused token for the cluster's operator and returns err
// for the client.
func (b *BootstrapTokens) refuse(r *http.Request, id string, err error) error {
	if b.Logger != nil {
		b.Logger.Warn("refused a bootstrap token", "token_id", id, "remote", r.RemoteAddr, "path", r.URL.Path, "reason", err.Error())
	}
	return err
}

// ErrBootstrapOnly is the reason a bootstrap token user may not call an
// API outside the bootstrap endpoints.
var ErrBootstrapOnly = errors.New("authn: bootstrap tokens may only be used to join the cluster (" + bootstrap.PathPrefix + "...)")

// IsBootstrapUser reports whether u authenticated with a bootstrap token.
func IsBootstrapUser(u *User) bool {
	for _, g := range u.Groups {
		if g == bootstrap.BootstrappersGroup {
			return true
		}
	}
	return false
}
