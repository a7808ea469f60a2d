package datapath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// hook is one cgroup attach point and the program that serves it.
type hook struct {
	name   string
	attach ebpf.AttachType
	prog   *ebpf.Program
}

// hooks lists the attach points. The reverse translations come first so
// that, when a new version starts with fresh maps, a socket is never
// translated by the new connect program and reverse-translated by the old.
func (d *Datapath) hooks() []hook {
	p := &d.objs.socklbPrograms
	return []hook{
		{"recvmsg4", ebpf.AttachCGroupUDP4Recvmsg, p.CairnRecvmsg4},
		{"getpeername4", ebpf.AttachCgroupInet4GetPeername, p.CairnGetpeername4},
		{"recvmsg6", ebpf.AttachCGroupUDP6Recvmsg, p.CairnRecvmsg6},
		{"getpeername6", ebpf.AttachCgroupInet6GetPeername, p.CairnGetpeername6},
		{"sendmsg4", ebpf.AttachCGroupUDP4Sendmsg, p.CairnSendmsg4},
		{"sendmsg6", ebpf.AttachCGroupUDP6Sendmsg, p.CairnSendmsg6},
		{"connect4", ebpf.AttachCGroupInet4Connect, p.CairnConnect4},
		{"connect6", ebpf.AttachCGroupInet6Connect, p.CairnConnect6},
	}
}

func hookNames() []string {
	return []string{"recvmsg4", "getpeername4", "recvmsg6", "getpeername6", "sendmsg4", "sendmsg6", "connect4", "connect6"}
}

func linkPin(pinPath, hook string) string { return filepath.Join(pinPath, "link_"+hook) }

// Attach puts the programs in force on the configured cgroup and pins the
// links. Links pinned by an earlier run on the same cgroup are updated in
// place, which the kernel does atomically, so no connect() goes
// untranslated during an agent restart. Call it once the maps hold the
// desired state.
func (d *Datapath) Attach() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	cgid, err := cgroupID(d.cfg.CgroupPath)
	if err != nil {
		return err
	}
	for _, l := range d.links {
		l.Close()
	}
	d.links = nil
	for _, h := range d.hooks() {
		l, err := d.attachHook(h, cgid)
		if err != nil {
			return err
		}
		d.links = append(d.links, l)
	}
	return nil
}

func (d *Datapath) attachHook(h hook, cgid uint64) (link.Link, error) {
	pin := linkPin(d.cfg.PinPath, h.name)
	old, err := link.LoadPinnedLink(pin, nil)
	if errors.Is(err, os.ErrNotExist) {
		l, err := d.attachNew(h)
		if err != nil {
			return nil, err
		}
		if err := l.Pin(pin); err != nil {
			l.Close()
			return nil, fmt.Errorf("datapath: pin %s link (needs bpf_link, Linux 5.7+): %w", h.name, err)
		}
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("datapath: load pinned %s link: %w", h.name, err)
	}
	if info, err := old.Info(); err == nil && info.Cgroup() != nil && info.Cgroup().CgroupId == cgid {
		if err := old.Update(h.prog); err != nil {
			old.Close()
			return nil, fmt.Errorf("datapath: replace %s program: %w", h.name, err)
		}
		return old, nil
	}
	// The pinned link serves another cgroup: the configuration changed.
	// Attach the new link and swap the pin by rename, which drops the old
	// link only once the new one is in force.
	defer old.Close()
	l, err := d.attachNew(h)
	if err != nil {
		return nil, err
	}
	tmp := pin + "_next" // bpffs refuses names with a dot
	os.Remove(tmp)
	if err := l.Pin(tmp); err != nil {
		l.Close()
		return nil, fmt.Errorf("datapath: pin %s link: %w", h.name, err)
	}
	if err := os.Rename(tmp, pin); err != nil {
		l.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("datapath: replace pinned %s link: %w", h.name, err)
	}
	d.log.Info("moved Service translation to another cgroup", "hook", h.name, "cgroup", d.cfg.CgroupPath)
	return l, nil
}

func (d *Datapath) attachNew(h hook) (link.Link, error) {
	l, err := link.AttachCgroup(link.CgroupOptions{Path: d.cfg.CgroupPath, Attach: h.attach, Program: h.prog})
	if err != nil {
		return nil, fmt.Errorf("datapath: attach %s to %s: %w", h.name, d.cfg.CgroupPath, err)
	}
	return l, nil
}

// Uninstall detaches the programs and removes the pinned links and maps.
// The datapath is closed afterwards.
func (d *Datapath) Uninstall() error {
	err := Uninstall(d.cfg.PinPath)
	return errors.Join(err, d.Close())
}

// Uninstall removes what a datapath pinned under pinPath, which detaches
// its programs from their cgroup once no process holds them open. It is
// for decommissioning a node; a restart must not call it.
func Uninstall(pinPath string) error {
	var errs []error
	for _, name := range hookNames() {
		if err := os.Remove(linkPin(pinPath, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("datapath: unpin %s link: %w", name, err))
		}
	}
	errs = append(errs, removeMapPins(pinPath))
	if err := os.Remove(pinPath); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.ENOTEMPTY) {
		errs = append(errs, fmt.Errorf("datapath: remove pin directory: %w", err))
	}
	return errors.Join(errs...)
}

// cgroupID returns the id the kernel reports for a cgroup v2 directory in
// link info, which is its inode number.
func cgroupID(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, fmt.Errorf("datapath: cgroup %s: %w", path, err)
	}
	return st.Ino, nil
}
