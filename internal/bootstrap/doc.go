// Package bootstrap lets a machine join a cluster with nothing but an API
// server URL and a join token, as kubeadm and k3s do.
//
// A join token reads
//
//	K10<sha256 of the cluster CA certificate, hex>::<token id>.<token secret>
//
// The hash comes first so that the joiner can check the CA it fetches
// without trusting the network: it reads the CA certificate from the
// unauthenticated GET /cacerts, refuses it unless its SHA-256 matches, and
// from then on trusts only that CA. The id.secret part is a Kubernetes
// bootstrap token: the API server knows it from the Secret
// kube-system/bootstrap-token-<id> (type bootstrap.kubernetes.io/token, as
// kubeadm writes it) and authenticates its bearer as the user
// system:bootstrap:<id> in the group system:bootstrappers, plus the groups
// the Secret's auth-extra-groups add.
//
// With the token, an agent asks for its certificates (a client certificate
// for system:node:NAME and its kubelet serving certificate) by posting
// certificate signing requests to an API server endpoint that signs them
// with the cluster CA. A server asks for the CA bundle itself (certificate
// and key, since a server mints its own certificates) and for the store
// members to join through; only tokens in the group
// system:bootstrappers:cairn:servers may. Both exchanges run over TLS
// verified against the pinned CA.
package bootstrap
