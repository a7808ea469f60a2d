// Package e2e drives the cairn binary from the command line as an operator
// would: it runs `cairn pki`, `cairn server`, `cairn snapshot` and the
// embedded `cairn etcdctl` as real processes on loopback and checks what
// they print and how they exit.
//
// The tests use the binary named by CAIRN_BIN (`make test` sets it to
// bin/cairn); without it, TestMain builds one into a temporary dir.
package e2e
