package nodeipam

import (
	"errors"
	"fmt"
	"math/big"
	"net"
)

// errFull is returned when every subnet of a cluster CIDR is allocated.
var errFull = errors.New("nodeipam: no CIDR left in the cluster range")

// maxSubnetBits bounds how many subnets one cluster CIDR is cut into
// (2^16), as Kubernetes does, so the allocation bitmap stays small.
const maxSubnetBits = 16

// cidrSet hands out the fixed-size subnets of one cluster CIDR. It is not
// safe for concurrent use; the allocator locks around it.
type cidrSet struct {
	cluster  *net.IPNet
	maskSize int // bits of each subnet's prefix
	count    int // number of subnets
	used     []bool
	next     int // where the search for a free subnet starts
	free     int
}

func newCIDRSet(cluster *net.IPNet, maskSize int) (*cidrSet, error) {
	ones, bits := cluster.Mask.Size()
	if maskSize < ones || maskSize > bits {
		return nil, fmt.Errorf("nodeipam: node mask size /%d does not fit in cluster CIDR %s", maskSize, cluster)
	}
	if maskSize-ones > maxSubnetBits {
		return nil, fmt.Errorf("nodeipam: cluster CIDR %s holds more than 2^%d subnets of /%d: use a larger node mask size", cluster, maxSubnetBits, maskSize)
	}
	n := 1 << (maskSize - ones)
	return &cidrSet{cluster: cluster, maskSize: maskSize, count: n, used: make([]bool, n), free: n}, nil
}

// subnet returns the i-th subnet of the set.
func (s *cidrSet) subnet(i int) *net.IPNet {
	_, bits := s.cluster.Mask.Size()
	base := new(big.Int).SetBytes(s.cluster.IP)
	off := new(big.Int).Lsh(big.NewInt(int64(i)), uint(bits-s.maskSize))
	ip := base.Add(base, off).FillBytes(make([]byte, len(s.cluster.IP)))
	return &net.IPNet{IP: ip, Mask: net.CIDRMask(s.maskSize, bits)}
}

// index returns the position of subnet c in the set, or false when c is
// not exactly one of its subnets.
func (s *cidrSet) index(c *net.IPNet) (int, bool) {
	ones, bits := c.Mask.Size()
	_, cbits := s.cluster.Mask.Size()
	if ones != s.maskSize || bits != cbits || !s.cluster.Contains(c.IP) {
		return 0, false
	}
	base := new(big.Int).SetBytes(s.cluster.IP)
	off := new(big.Int).Sub(new(big.Int).SetBytes(c.IP.Mask(c.Mask)), base)
	return int(off.Rsh(off, uint(bits-s.maskSize)).Int64()), true
}

// allocate takes the next free subnet, searching round-robin from the
// last allocation so that a released subnet is not handed out again at
// once (a deleted node's pods may still use it for a while).
func (s *cidrSet) allocate() (*net.IPNet, error) {
	if s.free == 0 {
		return nil, errFull
	}
	for i := 0; i < s.count; i++ {
		j := (s.next + i) % s.count
		if !s.used[j] {
			s.used[j] = true
			s.free--
			s.next = (j + 1) % s.count
			return s.subnet(j), nil
		}
	}
	return nil, errFull
}

// occupy marks c used; it reports false when c is not a subnet of the set.
func (s *cidrSet) occupy(c *net.IPNet) bool {
	i, ok := s.index(c)
	if !ok {
		return false
	}
	if !s.used[i] {
		s.used[i] = true
		s.free--
	}
	return true
}

// release frees c if it is one of the set's subnets.
func (s *cidrSet) release(c *net.IPNet) {
	if i, ok := s.index(c); ok && s.used[i] {
		s.used[i] = false
		s.free++
	}
}
