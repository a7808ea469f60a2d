// Package apiclient balances an agent's API requests over several API
// servers on the client side, so that an agent keeps working through the
// loss of any of them without a load balancer in front.
//
// New returns a rest.Config whose transport is a Balancer: each request
// goes to one healthy server (the same one while it stays healthy, so
// requests share one HTTP/2 connection; agents pick theirs at random, so
// the load spreads). A server that refuses connections, times out or
// answers 5xx is marked unhealthy; reads (GET, HEAD, OPTIONS), and any
// request that never reached it, are retried on another server at once,
// while a write that may have been applied is never sent twice. Unhealthy
// servers are probed on /readyz until they are back.
//
// Connections are set up to notice a dead server within seconds rather
// than the minutes TCP takes alone: a one-second dial timeout, TCP
// keepalives, and HTTP/2 pings on idle connections. A watch whose server
// dies breaks at once, marking the server unhealthy, and client-go's
// reflector re-establishes it on a live one.
//
// Once the API answers, the Balancer also learns the API servers listed in
// the kubernetes Service's EndpointSlices (default namespace, label
// kubernetes.io/service-name=kubernetes), adding and removing them as
// servers come and go; the --server list is always kept.
package apiclient
