// Package demoapp is the program of `cairn dev`'s demo image: a small HTTP
// server that answers with the name and address of the pod it runs in, and
// the client that asks it. Both are in the cairn binary itself (the hidden
// `cairn __demo-http` command), so the demo image needs no toolchain to
// build: its root filesystem is the cairn binary and the libraries it loads.
package demoapp
