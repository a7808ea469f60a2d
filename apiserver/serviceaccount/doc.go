// Package serviceaccount mints and checks the tokens that identify
// Kubernetes service accounts, as the TokenRequest API
// (serviceaccounts/{name}/token) hands them out: JSON Web Tokens signed
// with ES256, carrying Kubernetes' "kubernetes.io" claims (namespace,
// service account, and the pod a token is bound to).
//
// Every API server derives the same signing key from the cluster CA's
// key, so a token minted by one replica is accepted by all of them, with
// no key file to copy; replacing the CA replaces the key and with it
// every token.
package serviceaccount
