package embedded

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"cairn/node/images"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criImage converts a stored image to its CRI description.
func criImage(img images.Image) *runtimeapi.Image {
	out := &runtimeapi.Image{
		Id: img.ID, RepoTags: img.RepoTags, RepoDigests: img.RepoDigests,
		Size: uint64(img.Size), Spec: &runtimeapi.ImageSpec{Image: img.ID},
	}
	userPart, _, _ := strings.Cut(img.Config.User, ":")
	if n, err := strconv.ParseInt(userPart, 10, 64); err == nil {
		out.Uid = &runtimeapi.Int64Value{Value: n}
	} else {
		out.Username = userPart
	}
	return out
}

// ListImages lists the stored images, or the one the filter names.
func (r *Runtime) ListImages(ctx context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	if ref := req.GetFilter().GetImage().GetImage(); ref != "" {
		img, err := r.cfg.Images.Get(ref)
		if errors.Is(err, images.ErrNotFound) {
			return &runtimeapi.ListImagesResponse{}, nil
		}
		if err != nil {
			return nil, err
		}
		return &runtimeapi.ListImagesResponse{Images: []*runtimeapi.Image{criImage(img)}}, nil
	}
	imgs, err := r.cfg.Images.List()
	if err != nil {
		return nil, err
	}
	out := make([]*runtimeapi.Image, len(imgs))
	for i, img := range imgs {
		out[i] = criImage(img)
	}
	return &runtimeapi.ListImagesResponse{Images: out}, nil
}

// ImageStatus describes an image; an image not stored gets an empty
// answer, not an error, as the CRI wants.
func (r *Runtime) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	img, err := r.cfg.Images.Get(req.GetImage().GetImage())
	if errors.Is(err, images.ErrNotFound) {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ImageStatusResponse{Image: criImage(img)}, nil
}

// PullImage pulls an image with the given credentials and returns its
// ID.
func (r *Runtime) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	var auth *images.Auth
	if a := req.GetAuth(); a != nil {
		auth = &images.Auth{
			Username: a.GetUsername(), Password: a.GetPassword(), Auth: a.GetAuth(),
			IdentityToken: a.GetIdentityToken(), RegistryToken: a.GetRegistryToken(),
		}
	}
	img, err := r.cfg.Images.Pull(ctx, req.GetImage().GetImage(), auth)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PullImageResponse{ImageRef: img.ID}, nil
}

// RemoveImage deletes an image and all its names. Removing an image not
// stored succeeds. Containers using it keep their root filesystem.
func (r *Runtime) RemoveImage(ctx context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	err := r.cfg.Images.Remove(req.GetImage().GetImage())
	if err != nil && !errors.Is(err, images.ErrNotFound) {
		return nil, err
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}
