package bootstrap

// Paths of the API server's bootstrap endpoints.
const (
	// PathCACerts serves the cluster CA certificate (PEM) to anyone: the
	// joiner checks it against its token's hash.
	PathCACerts = "/cacerts"
	// PathPrefix starts the authenticated bootstrap endpoints, the only
	// ones bootstrap token users may call.
	PathPrefix = "/cairn/v1/bootstrap/"
	// PathCertificates signs a CertificateRequest (POST).
	PathCertificates = PathPrefix + "certificates"
	// PathServerBundle hands a joining server the CA bundle and the store
	// members (GET); only ServersGroup may.
	PathServerBundle = PathPrefix + "server"
	// PathStoreMembers lists the store members (GET), for administrators
	// (system:masters).
	PathStoreMembers = "/cairn/v1/store/members"
)

// Usages of the certificates PathCertificates signs.
const (
	// UsageClient is a node's API client certificate: CN system:node:NAME,
	// O system:nodes, no names.
	UsageClient = "client"
	// UsageServing is a node's kubelet serving certificate: CN
	// system:node:NAME, O system:nodes, with the node's DNS names and IPs.
	UsageServing = "serving"
)

// Identity of node certificates, as Kubernetes' node authorizer expects.
const (
	NodeUserPrefix = "system:node:"
	NodesGroup     = "system:nodes"
)

// CertificateRequest is the body of a POST to PathCertificates.
type CertificateRequest struct {
	// CSR is a PEM "CERTIFICATE REQUEST".
	CSR string `json:"csr"`
	// Usage is UsageClient or UsageServing.
	Usage string `json:"usage"`
}

// CertificateResponse answers a CertificateRequest.
type CertificateResponse struct {
	// Certificate is the signed certificate, PEM.
	Certificate string `json:"certificate"`
	// CA is the cluster CA certificate, PEM.
	CA string `json:"ca"`
}

// ServerBundle is what a joining server gets.
type ServerBundle struct {
	// CACert and CAKey are the cluster CA, PEM (the key PKCS#8).
	CACert string `json:"caCert"`
	CAKey  string `json:"caKey"`
	// StoreMembers are the store's members, the answering server's first.
	StoreMembers []StoreMember `json:"storeMembers"`
}

// StoreMember is one member of the store cluster.
type StoreMember struct {
	Name       string   `json:"name"`
	ID         string   `json:"id"` // hex, as etcdctl prints it
	ClientURLs []string `json:"clientURLs,omitempty"`
	PeerURLs   []string `json:"peerURLs,omitempty"`
	Learner    bool     `json:"learner,omitempty"`
}

// StoreMemberList answers PathStoreMembers.
type StoreMemberList struct {
	Members []StoreMember `json:"members"`
}
