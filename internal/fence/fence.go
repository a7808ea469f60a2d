// Package fence defines how a leader-only component tells the API server
// which leadership its writes are made under, so that the store can
// refuse them once that leadership has passed to someone else.
//
// A fenced request carries the header
//
//	Cairn-Fence: <name>=<token>
//
// where name selects a store key under /cairn/fences/ and token is the
// value that key must still hold for the write to apply:
//
//   - "leader=<epoch>" for the loops of the Raft-colocated leader; every
//     new Raft leader commits a higher epoch there.
//   - "lease/<namespace>/<name>=<holder>#<transitions>" for a component
//     elected through a coordination.k8s.io Lease; the API server rewrites
//     that key with every write of the Lease.
package fence

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Header is the HTTP request header that carries a fence.
const Header = "Cairn-Fence"

// KeyPrefix is where fence tokens live in the store.
const KeyPrefix = "/cairn/fences/"

// LeaderName is the fence name of the Raft-colocated leadership.
const LeaderName = "leader"

// Fence is a parsed fence header.
type Fence struct {
	Name  string
	Token string
}

// Leader is the fence of the Raft-colocated leader at epoch.
func Leader(epoch uint64) Fence {
	return Fence{Name: LeaderName, Token: strconv.FormatUint(epoch, 10)}
}

// Lease is the fence of a Lease holder.
func Lease(namespace, name, holder string, transitions int32) Fence {
	return Fence{Name: LeaseName(namespace, name), Token: LeaseToken(holder, transitions)}
}

// LeaseName is the fence name of the Lease namespace/name.
func LeaseName(namespace, name string) string { return "lease/" + namespace + "/" + name }

// LeaseToken is the token of a Lease held by holder after transitions
// changes of holder; a holder that loses the Lease and wins it back gets
// a new token.
func LeaseToken(holder string, transitions int32) string {
	return holder + "#" + strconv.FormatInt(int64(transitions), 10)
}

// StoreKey is the store key whose value the fence's token must equal.
func (f Fence) StoreKey() string { return KeyPrefix + f.Name }

// String is the header value.
func (f Fence) String() string { return f.Name + "=" + f.Token }

// Parse reads a header value.
func Parse(v string) (Fence, error) {
	name, token, ok := strings.Cut(v, "=")
	if !ok || token == "" {
		return Fence{}, fmt.Errorf("fence: %s header %q is not NAME=TOKEN", Header, v)
	}
	switch {
	case name == LeaderName:
		if _, err := strconv.ParseUint(token, 10, 64); err != nil {
			return Fence{}, fmt.Errorf("fence: the leader epoch %q is not a number", token)
		}
	case strings.HasPrefix(name, "lease/"):
		parts := strings.Split(name, "/")
		if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
			return Fence{}, fmt.Errorf("fence: %q is not lease/NAMESPACE/NAME", name)
		}
	default:
		return Fence{}, fmt.Errorf("fence: unknown fence %q (want %q or lease/NAMESPACE/NAME)", name, LeaderName)
	}
	return Fence{Name: name, Token: token}, nil
}

// StatusCause is the cause type of the API server's refusal of a fenced
// write whose leadership has passed.
const StatusCause = "LeadershipFenced"

// IsRefused reports whether err is the API server's refusal of a fenced
// write whose leadership has passed. The writer should stop, not retry.
func IsRefused(err error) bool {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return false
	}
	if d := se.Status().Details; d != nil {
		for _, c := range d.Causes {
			if c.Type == StatusCause {
				return true
			}
		}
	}
	return false
}
