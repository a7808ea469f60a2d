// Package dns is the node's cluster DNS: every agent answers its own
// pods' queries for the cluster's names, so that a pod reaches a Service
// by name with no DNS Deployment to run, and a node's pods keep
// resolving while other nodes fail.
//
// It follows the Kubernetes DNS specification for the names a pod meets
// most, from the agent's caches of the Services and EndpointSlices:
//
//	svc.ns.svc.DOMAIN                 A/AAAA: the ClusterIPs; for a headless
//	                                  Service, its ready endpoints' addresses;
//	                                  CNAME for an ExternalName Service
//	hostname.svc.ns.svc.DOMAIN        A/AAAA: a headless Service's endpoint
//	                                  with that hostname (StatefulSet pods)
//	_port._proto.svc.ns.svc.DOMAIN    SRV: a named port of the Service
//	a-b-c-d.ns.pod.DOMAIN             A: the address a.b.c.d
//
// and PTR for a ClusterIP (the Service's name) or a headless Service's
// endpoint (its name under the Service). Other names in the domain are
// NXDOMAIN; names outside it, and reverse lookups of other addresses, go
// to the node's own resolvers (its resolv.conf).
package dns
