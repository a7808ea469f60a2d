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
)

// ipam allocates pod addresses from one prefix, host-local style: one
// file per address in use, named by the address and holding the owner's
// ID, plus a file with the last address handed out so that a released
// address is reused last.
//
// The agent is the directory's only writer, and a burst of pod starts on
// a node allocates all at once: the directory is read into memory once,
// an allocation reserves its address there under a mutex held for
// microseconds, and writes its file after. Holding a lock across the
// file writes, as a flock did, queued every sandbox of the burst behind
// each create. The file is made exclusively, so an address taken on
// disk behind the cache's back is still never handed out twice.
type ipam struct {
	dir string

	mu     sync.Mutex
	loaded bool
	// owners is address → owner for every address in use or being
	// written, as of the last read of the directory and this process's
	// changes since.
	owners map[netip.Addr]string
	// pending are the addresses reserved whose files are being written:
	// a reread of the directory keeps them.
	pending map[netip.Addr]string
	last    netip.Addr
}

// lastFileWidth is the width "last" is padded to, past the longest
// address, so that it is rewritten in place: truncating a file to
// rewrite it costs the filesystem more than the write.
const lastFileWidth = 40

// loadLocked reads the directory into the cache once. a.mu is held.
func (a *ipam) loadLocked() error {
	if a.loaded {
		return nil
	}
	return a.refreshLocked()
}

// refreshLocked reads the directory into the cache again, and the last
// address handed out the first time. a.mu is held.
func (a *ipam) refreshLocked() error {
	if err := a.readLocked(); err != nil {
		return err
	}
	if !a.loaded {
		if raw, err := os.ReadFile(filepath.Join(a.dir, "last")); err == nil {
			a.last, _ = netip.ParseAddr(strings.TrimSpace(string(raw)))
		}
		a.loaded = true
	}
	return nil
}

// readLocked replaces the cache with the directory's files, keeping the
// reservations being written. a.mu is held.
func (a *ipam) readLocked() error {
	entries, err := os.ReadDir(a.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("network: %w", err)
	}
	owners := make(map[netip.Addr]string, len(entries)+len(a.pending))
	for _, e := range entries {
		addr, err := netip.ParseAddr(e.Name())
		if err != nil {
			continue
		}
		owner, known := a.owners[addr]
		if !known {
			raw, err := os.ReadFile(filepath.Join(a.dir, e.Name()))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return fmt.Errorf("network: %w", err)
			}
			owner = strings.TrimSpace(string(raw))
		}
		owners[addr] = owner
	}
	maps.Copy(owners, a.pending)
	a.owners = owners
	return nil
}

// allocations returns address → owner for every address in use, as the
// directory lists them now. The map is the caller's.
func (a *ipam) allocations() (map[netip.Addr]string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.refreshLocked(); err != nil {
		return nil, err
	}
	return maps.Clone(a.owners), nil
}

// allocate returns the address owner holds in prefix, allocating one if
// it holds none. The network address, the gateway (the first address)
// and the broadcast address are never handed out.
func (a *ipam) allocate(prefix netip.Prefix, owner string) (netip.Addr, error) {
	if err := os.MkdirAll(a.dir, 0o700); err != nil {
		return netip.Addr{}, fmt.Errorf("network: %w", err)
	}
	var skip map[netip.Addr]bool // addresses found taken on disk
	for {
		addr, held, err := a.reserve(prefix, owner, skip)
		if err != nil || held {
			return addr, err
		}
		f, err := os.OpenFile(filepath.Join(a.dir, addr.String()), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			_, err = f.WriteString(owner)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if errors.Is(err, os.ErrExist) {
			// Written by someone the cache has not seen: the address is
			// theirs, or ours if the file names us.
			raw, rerr := os.ReadFile(filepath.Join(a.dir, addr.String()))
			onDisk := strings.TrimSpace(string(raw))
			a.settle(addr, owner, onDisk, rerr == nil)
			if rerr == nil && onDisk == owner {
				return addr, nil
			}
			if skip == nil {
				skip = map[netip.Addr]bool{}
			}
			skip[addr] = true
			continue
		}
		if err != nil {
			os.Remove(filepath.Join(a.dir, addr.String()))
			a.settle(addr, owner, "", false)
			return netip.Addr{}, fmt.Errorf("network: %w", err)
		}
		a.settle(addr, owner, owner, true)
		// Only a hint for the next allocations, after a restart too.
		last := addr.String()
		if f, err := os.OpenFile(filepath.Join(a.dir, "last"), os.O_WRONLY|os.O_CREATE, 0o600); err == nil {
			f.WriteAt([]byte(last+strings.Repeat(" ", lastFileWidth-len(last))+"\n"), 0)
			f.Close()
		}
		return addr, nil
	}
}

// reserve finds the address owner holds in prefix (held) or reserves a
// free one, not in skip, in the cache.
func (a *ipam) reserve(prefix netip.Prefix, owner string, skip map[netip.Addr]bool) (addr netip.Addr, held bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.loadLocked(); err != nil {
		return netip.Addr{}, false, err
	}
	for addr, o := range a.owners {
		if o == owner && prefix.Contains(addr) && !skip[addr] {
			if _, writing := a.pending[addr]; !writing {
				return addr, true, nil
			}
		}
	}
	first := prefix.Masked().Addr().Next().Next()
	addr = first
	if a.last.IsValid() && prefix.Contains(a.last) {
		addr = a.last.Next()
	}
	for range 1 << min(32-prefix.Bits(), 24) {
		if !usable(prefix, addr) {
			addr = first
		}
		if _, taken := a.owners[addr]; !taken && !skip[addr] {
			a.owners[addr] = owner
			if a.pending == nil {
				a.pending = map[netip.Addr]string{}
			}
			a.pending[addr] = owner
			a.last = addr
			return addr, false, nil
		}
		addr = addr.Next()
	}
	return netip.Addr{}, false, fmt.Errorf("network: no free address left in %s (%d in use)", prefix, len(a.owners))
}

// settle ends the reservation of addr by owner: the address now belongs
// to onDisk if found, else it is free.
func (a *ipam) settle(addr netip.Addr, owner, onDisk string, found bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending[addr] == owner {
		delete(a.pending, addr)
	}
	if found {
		a.owners[addr] = onDisk
	} else if a.owners[addr] == owner {
		delete(a.owners, addr)
	}
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
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.loadLocked(); err != nil {
		return err
	}
	return a.removeLocked(func(o string) bool { return o == owner })
}

// releaseIf frees every address whose owner matches, as the directory
// lists them now.
func (a *ipam) releaseIf(match func(owner string) bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.refreshLocked(); err != nil {
		return err
	}
	return a.removeLocked(match)
}

// removeLocked deletes the files of the addresses whose owner matches,
// but not of those still being written. a.mu is held.
func (a *ipam) removeLocked(match func(owner string) bool) error {
	for addr, o := range a.owners {
		if _, writing := a.pending[addr]; writing || !match(o) {
			continue
		}
		if err := os.Remove(filepath.Join(a.dir, addr.String())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("network: %w", err)
		}
		delete(a.owners, addr)
	}
	return nil
}

// reset forgets what was read, after the directory was removed.
func (a *ipam) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.loaded, a.owners, a.last = false, nil, netip.Addr{}
}
