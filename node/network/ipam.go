package network

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ipam allocates pod addresses from one prefix, host-local style: one
// file per address in use, named by the address and holding the owner's
// ID, plus a file with the last address handed out so that a released
// address is reused last. A flock on the directory orders allocations.
type ipam struct {
	dir string

	// owners caches the owner read from each address file. A file is
	// written once, when its address is handed out, and only deleted
	// after, so listing the directory's names tells which files to read:
	// allocating no longer reads every file, which made a burst of pod
	// starts quadratic under the network's lock.
	mu     sync.Mutex
	owners map[netip.Addr]string
}

func (a *ipam) lock() (func(), error) {
	if err := os.MkdirAll(a.dir, 0o700); err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(a.dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("network: locking %s: %w", a.dir, err)
	}
	return func() { f.Close() }, nil
}

// allocations returns address → owner for every address in use. The
// map is the caller's.
func (a *ipam) allocations() (map[netip.Addr]string, error) {
	entries, err := os.ReadDir(a.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[netip.Addr]string, len(entries))
	for _, e := range entries {
		addr, err := netip.ParseAddr(e.Name())
		if err != nil {
			continue
		}
		owner, known := a.owners[addr]
		if !known {
			raw, err := os.ReadFile(filepath.Join(a.dir, e.Name()))
			if errors.Is(err, os.ErrNotExist) {
				continue // released meanwhile, by a caller without the flock
			}
			if err != nil {
				return nil, fmt.Errorf("network: %w", err)
			}
			owner = strings.TrimSpace(string(raw))
		}
		out[addr] = owner
	}
	a.owners = maps.Clone(out)
	return out, nil
}

// forget drops a deleted address file.
func (a *ipam) forget(addr netip.Addr) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.owners, addr)
}

// remember records an address file just written.
func (a *ipam) remember(addr netip.Addr, owner string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.owners == nil {
		a.owners = map[netip.Addr]string{}
	}
	a.owners[addr] = owner
}

// allocate returns the address owner holds in prefix, allocating one if
// it holds none. The network address, the gateway (the first address)
// and the broadcast address are never handed out.
func (a *ipam) allocate(prefix netip.Prefix, owner string) (netip.Addr, error) {
	unlock, err := a.lock()
	if err != nil {
		return netip.Addr{}, err
	}
	defer unlock()
	inUse, err := a.allocations()
	if err != nil {
		return netip.Addr{}, err
	}
	for addr, o := range inUse {
		if o == owner && prefix.Contains(addr) {
			return addr, nil
		}
	}
	first := prefix.Masked().Addr().Next().Next()
	start := first
	if raw, err := os.ReadFile(filepath.Join(a.dir, "last")); err == nil {
		if last, err := netip.ParseAddr(strings.TrimSpace(string(raw))); err == nil && prefix.Contains(last) {
			start = last.Next()
		}
	}
	addr := start
	for range 1 << min(32-prefix.Bits(), 24) {
		if !usable(prefix, addr) {
			addr = first
		}
		if _, taken := inUse[addr]; !taken {
			if err := os.WriteFile(filepath.Join(a.dir, addr.String()), []byte(owner), 0o600); err != nil {
				return netip.Addr{}, fmt.Errorf("network: %w", err)
			}
			a.remember(addr, owner)
			if err := os.WriteFile(filepath.Join(a.dir, "last"), []byte(addr.String()), 0o600); err != nil {
				return netip.Addr{}, fmt.Errorf("network: %w", err)
			}
			return addr, nil
		}
		addr = addr.Next()
	}
	return netip.Addr{}, fmt.Errorf("network: no free address left in %s (%d in use)", prefix, len(inUse))
}

// usable reports whether addr may be handed out in prefix.
func usable(prefix netip.Prefix, addr netip.Addr) bool {
	if !prefix.Contains(addr) {
		return false
	}
	first := prefix.Masked().Addr().Next().Next()
	if addr.Less(first) {
		return false
	}
	return prefix.Contains(addr.Next()) // not the broadcast address
}

// release frees every address owner holds.
func (a *ipam) release(owner string) error {
	return a.releaseIf(func(o string) bool { return o == owner })
}

// releaseIf frees every address whose owner matches.
func (a *ipam) releaseIf(match func(owner string) bool) error {
	unlock, err := a.lock()
	if err != nil {
		return err
	}
	defer unlock()
	inUse, err := a.allocations()
	if err != nil {
		return err
	}
	for addr, o := range inUse {
		if match(o) {
			if err := os.Remove(filepath.Join(a.dir, addr.String())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("network: %w", err)
			}
			a.forget(addr)
		}
	}
	return nil
}
