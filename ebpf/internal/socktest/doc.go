// Package socktest runs both ends of socket load-balancing tests: backends
// listening in a test network namespace, and a client process started in
// a test cgroup, whose sockets the programs attached to that cgroup see.
//
// The client is the test binary itself, re-executed: a package's TestMain
// calls RunChildIfRequested first, which serves requests from the parent
// when the process was started by StartClient.
package socktest
