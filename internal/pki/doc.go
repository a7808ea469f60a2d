// Package pki is Cairn's certificate authority: one CA per cluster issues the
// server, peer and client certificates, and builds the TLS configurations the
// servers and tools use, so that every connection in a cluster is mutually
// authenticated against that CA and nothing else.
//
// A PKI dir holds the CA and an admin client certificate:
//
//	ca.crt  ca.key  admin.crt  admin.key   (keys are written 0600)
//
// Servers keep only the CA in their PKI dir and mint their own serving and
// peer certificates on start, for the hosts they advertise.
package pki

// Names of the files in a PKI dir.
const (
	// CACertFile is the CA certificate, which every server and client trusts.
	CACertFile = "ca.crt"
	// CAKeyFile is the CA private key, needed by servers to mint their certificates.
	CAKeyFile = "ca.key"
	// AdminCertFile is the admin client certificate (O=system:masters).
	AdminCertFile = "admin.crt"
	// AdminKeyFile is the private key of the admin client certificate.
	AdminKeyFile = "admin.key"
)

// Names written into the certificates Init creates.
const (
	// CACommonName is the CN of a cluster CA.
	CACommonName = "cairn-ca"
	// AdminCommonName is the CN of the admin client certificate.
	AdminCommonName = "cairn-admin"
	// AdminOrganization is the O of the admin client certificate; Kubernetes
	// authorizers treat this group as cluster administrators.
	AdminOrganization = "system:masters"
	// PeerOrganization is the O of the server peer certificates; raft and
	// other peer connections require it, so a client certificate signed by the
	// same CA cannot pose as a replica.
	PeerOrganization = "cairn:peers"
)
