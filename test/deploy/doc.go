// Package deploy tests what an operator installs and runs: the systemd
// units, the example configurations, the install script, the HAProxy front
// and the runbooks in docs/runbooks.
//
// The runbook tests run the runbooks' own command blocks, as an operator
// would paste them, against clusters of real cairn processes. A test's
// machines are directories that stand for their file systems and loopback
// addresses of their own (127.X.Y.N, one random /24 per test) on which the
// servers use the standard ports, so the commands run as written; a
// stand-in for systemctl starts and stops what the installed units say.
// lab_test.go explains the rules.
//
// The tests use the binary named by CAIRN_BIN (`make test` sets it to
// bin/cairn); without it, TestMain builds one into a temporary directory.
// The HAProxy tests need Debian's haproxy package.
package deploy
