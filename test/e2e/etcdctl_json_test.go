package e2e

// The shapes etcdctl prints with -w json, reduced to the fields the tests
// read.

type ctlHeader struct {
	ClusterID uint64 `json:"cluster_id"`
	MemberID  uint64 `json:"member_id"`
	Revision  int64  `json:"revision"`
	RaftTerm  uint64 `json:"raft_term"`
}

type ctlMember struct {
	ID         uint64   `json:"ID"`
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs"`
	IsLearner  bool     `json:"isLearner"`
}

type ctlMemberList struct {
	Header  ctlHeader   `json:"header"`
	Members []ctlMember `json:"members"`
}

// byName returns the listed member with the given name, if any.
func (l ctlMemberList) byName(name string) (ctlMember, bool) {
	for _, m := range l.Members {
		if m.Name == name {
			return m, true
		}
	}
	return ctlMember{}, false
}

type ctlEndpointStatus struct {
	Endpoint string `json:"Endpoint"`
	Status   struct {
		Header    ctlHeader `json:"header"`
		Leader    uint64    `json:"leader"`
		RaftTerm  uint64    `json:"raftTerm"`
		RaftIndex uint64    `json:"raftIndex"`
	} `json:"Status"`
}

type ctlEndpointHash struct {
	Endpoint string `json:"Endpoint"`
	HashKV   struct {
		Header       ctlHeader `json:"header"`
		Hash         uint32    `json:"hash"`
		HashRevision int64     `json:"hash_revision"`
	} `json:"HashKV"`
}

type ctlKV struct {
	Key            []byte `json:"key"`
	Value          []byte `json:"value"`
	CreateRevision int64  `json:"create_revision"`
	ModRevision    int64  `json:"mod_revision"`
	Version        int64  `json:"version"`
	Lease          int64  `json:"lease"`
}

type ctlRange struct {
	Header ctlHeader `json:"header"`
	KVs    []ctlKV   `json:"kvs"`
	Count  int64     `json:"count"`
}
