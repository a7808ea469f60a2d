// Package images is the node's image store: a content store of blobs by
// digest with an index of image names, laid out as an OCI image layout
// under the agent's data directory, plus a cache of unpacked root
// filesystems for the embedded runtime.
//
// Images arrive by pulling from a registry or by importing an OCI layout
// tar or a docker-archive tar (`cairn image import`). Several processes
// may use one store: every change of the index happens under an exclusive
// file lock, and new blobs are first written to a private temporary
// directory, so that an import works whether or not the agent runs.
// An image is unpacked as it arrives, as containerd does, so that its
// first container does not wait for the layers; an image stored without
// its tree is unpacked on first use.
//
// On disk, under the store directory:
//
//	oci-layout, index.json   the OCI layout marker and the index: one
//	                         entry per image name, pointing at a manifest
//	blobs/sha256/<hex>       manifests, configs and compressed layers
//	rootfs/<id>/             an unpacked root filesystem, per image ID
//	rootfs/<id>.leases/      one file per container using that rootfs
//	tmp/                     downloads and imports in progress
//	lock                     the store's flock(2) lock file
package images
