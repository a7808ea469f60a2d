package images

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Auth holds the registry credentials of a pull, as the kubelet passes
// them from image pull secrets. The zero value pulls anonymously.
type Auth struct {
	Username      string
	Password      string
	Auth          string
	IdentityToken string
	RegistryToken string
}

// Pull downloads an image for this machine's platform from its registry,
// stores it under its normalised name, and returns it. Pulling a name the
// store already holds fetches the manifest again and moves the name to
// the image it now points at.
func (s *Store) Pull(ctx context.Context, ref string, auth *Auth) (Image, error) {
	norm, err := Normalize(ref)
	if err != nil {
		return Image{}, err
	}
	r, err := name.ParseReference(norm)
	if err != nil {
		return Image{}, fmt.Errorf("images: %w", err)
	}
	if slices.Contains(s.insecure, r.Context().RegistryStr()) {
		if r, err = name.ParseReference(norm, name.Insecure); err != nil {
			return Image{}, fmt.Errorf("images: %w", err)
		}
	}
	authenticator := authn.Anonymous
	if auth != nil && *auth != (Auth{}) {
		authenticator = authn.FromConfig(authn.AuthConfig{
			Username: auth.Username, Password: auth.Password, Auth: auth.Auth,
			IdentityToken: auth.IdentityToken, RegistryToken: auth.RegistryToken,
		})
	}
	desc, err := remote.Get(r, remote.WithContext(ctx), remote.WithAuth(authenticator), remote.WithPlatform(s.platform))
	if err != nil {
		return Image{}, fmt.Errorf("images: pulling %s: %w", norm, err)
	}
	img, err := desc.Image()
	if err != nil {
		return Image{}, fmt.Errorf("images: pulling %s: %w", norm, err)
	}
	tmp, err := os.MkdirTemp(s.path("tmp"), "pull-")
	if err != nil {
		return Image{}, fmt.Errorf("images: %w", err)
	}
	defer os.RemoveAll(tmp)
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return Image{}, fmt.Errorf("images: %w", err)
	}
	if err := p.WriteImage(img); err != nil {
		return Image{}, fmt.Errorf("images: pulling %s: %w", norm, err)
	}
	d, err := imageDescriptor(img)
	if err != nil {
		return Image{}, fmt.Errorf("images: pulling %s: %w", norm, err)
	}
	d.Annotations = map[string]string{}
	if hasTag(norm) {
		d.Annotations = nameAnnotations(norm)
	}
	rd, err := repoDigest(norm, desc.Digest.String())
	if err != nil {
		return Image{}, err
	}
	d.Annotations[annotationRepoDigest] = rd
	if err := s.commit(tmp, []v1.Descriptor{d}); err != nil {
		return Image{}, err
	}
	got, err := s.describe(d)
	if err != nil {
		return Image{}, err
	}
	if err := s.ensureUnpacked(ctx, []Image{got}); err != nil {
		return Image{}, fmt.Errorf("images: pulling %s: %w", norm, err)
	}
	s.log.Info("pulled image", "ref", norm, "id", got.ID, "digest", desc.Digest)
	return s.Get(got.ID)
}
