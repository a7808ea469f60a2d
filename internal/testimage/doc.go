// Package testimage builds small container images offline for tests: a
// busybox image from the host's busybox-static binary, and an HTTP server
// image with a static Go binary built on the fly. Images come as
// go-containerregistry values (to serve from an in-test registry) or as
// OCI layout and docker-archive tars (to import).
//
// The busybox image needs /bin/busybox from Debian's busybox-static
// package; without it the helpers skip the test, unless
// CAIRN_REQUIRE_PRIVILEGED=1 (as in CI), where they fail it.
package testimage
