package cri

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ListImages implements runtime.ImageService.
func (r *Runtime) ListImages(ctx context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	return call(ctx, r, "ListImages", r.img.ListImages, req)
}

// ImageStatus implements runtime.ImageService. An image containerd does
// not have comes back with a nil Image, not an error.
func (r *Runtime) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	return call(ctx, r, "ImageStatus", r.img.ImageStatus, req)
}

// PullImage implements runtime.ImageService. A pull takes as long as the
// image is large, so only ctx bounds it.
func (r *Runtime) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	resp, err := r.img.PullImage(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("cri: PullImage %s: %w", req.GetImage().GetImage(), err)
	}
	return resp, nil
}

// RemoveImage implements runtime.ImageService.
func (r *Runtime) RemoveImage(ctx context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	return call(ctx, r, "RemoveImage", r.img.RemoveImage, req)
}
