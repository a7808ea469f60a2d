package datapath

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
)

// DefaultMapSize is the default capacity of the service and backend maps:
// a service takes 1 + its backend count entries of the service map.
const DefaultMapSize = 65536

// Config is used to open the datapath.
type Config struct {
	// CgroupPath is the cgroup v2 directory whose processes, and those of
	// its descendants, get Service translation.
	CgroupPath string
	// PinPath is a directory on a bpffs mount that holds this datapath's
	// maps and links. Each agent on a machine needs its own.
	PinPath string
	// MapSize is the capacity of the service and backend maps; 0 means
	// DefaultMapSize. Changing it starts over with empty maps.
	MapSize uint32
	// Logger receives warnings about degraded operation; nil discards them.
	Logger *slog.Logger
}

// Datapath is the loaded programs and maps of one agent. Its methods are
// safe for concurrent use.
type Datapath struct {
	cfg  Config
	log  *slog.Logger
	objs socklbObjects

	mu     sync.Mutex
	m      *mirror
	writes WriteCounts
	links  []link.Link
}

// WriteCounts counts the map writes (updates and deletes) issued since Open.
type WriteCounts struct {
	SvcPuts, SvcDeletes         uint64
	BackendPuts, BackendDeletes uint64
}

// Total is the sum of all writes.
func (w WriteCounts) Total() uint64 {
	return w.SvcPuts + w.SvcDeletes + w.BackendPuts + w.BackendDeletes
}

// Stats describes what is programmed.
type Stats struct {
	// Services is the number of programmed frontends.
	Services int
	// Backends is the number of backend entries, over all services.
	Backends int
	// SvcEntries and BackendEntries are the map entries in use, out of
	// MapSize each.
	SvcEntries, BackendEntries int
	MapSize                    int
	Writes                     WriteCounts
}

// Open loads the programs and maps, reusing the maps pinned under
// cfg.PinPath by an earlier run so that their content survives a restart.
// The programs are not attached until Attach: program the maps first.
func Open(cfg Config) (*Datapath, error) {
	if cfg.CgroupPath == "" || cfg.PinPath == "" {
		return nil, errors.New("datapath: CgroupPath and PinPath are required")
	}
	if cfg.MapSize == 0 {
		cfg.MapSize = DefaultMapSize
	}
	d := &Datapath{cfg: cfg, log: cfg.Logger}
	if d.log == nil {
		d.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	// Kernels before 5.11 charge BPF memory to RLIMIT_MEMLOCK.
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("datapath: raise the memlock limit for BPF maps (run with CAP_SYS_RESOURCE or on Linux 5.11+): %w", err)
	}
	if err := os.MkdirAll(cfg.PinPath, 0o700); err != nil {
		return nil, fmt.Errorf("datapath: create pin directory: %w", err)
	}
	if err := checkBPFFS(cfg.PinPath); err != nil {
		return nil, err
	}
	spec, err := loadSocklb()
	if err != nil {
		return nil, fmt.Errorf("datapath: %w", err)
	}
	spec.Maps[socklbMapCairnSvc].MaxEntries = cfg.MapSize
	spec.Maps[socklbMapCairnBackends].MaxEntries = cfg.MapSize
	if err := features.HaveProgramHelper(ebpf.CGroupSockAddr, asm.FnSetRetval); err != nil {
		d.log.Warn("kernel lacks bpf_set_retval for socket address programs (Linux 6.1+): connect() to a Service without endpoints fails with EPERM instead of ECONNREFUSED", "err", err)
		if err := spec.Variables[socklbVarRefuseWithErrno].Set(uint8(0)); err != nil {
			return nil, fmt.Errorf("datapath: %w", err)
		}
	}
	opts := &ebpf.CollectionOptions{Maps: ebpf.MapOptions{PinPath: cfg.PinPath}}
	err = spec.LoadAndAssign(&d.objs, opts)
	if errors.Is(err, ebpf.ErrMapIncompatible) {
		// A new map layout or size: the old programs keep their maps until
		// Attach replaces them, and these start empty.
		d.log.Warn("pinned maps do not match this version; starting with empty maps", "pinPath", cfg.PinPath, "err", err)
		if err := removeMapPins(cfg.PinPath); err != nil {
			return nil, err
		}
		err = spec.LoadAndAssign(&d.objs, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("datapath: load programs: %w", err)
	}
	d.m, err = readMirror(d.objs.CairnSvc, d.objs.CairnBackends)
	if err != nil {
		d.objs.Close()
		return nil, err
	}
	return d, nil
}

// Close releases this process's handles. Pinned links and maps stay, so
// Service traffic keeps flowing with the last programmed state.
func (d *Datapath) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, l := range d.links {
		errs = append(errs, l.Close())
	}
	d.links = nil
	errs = append(errs, d.objs.Close())
	return errors.Join(errs...)
}

// Sync makes the maps hold exactly the given services: it writes what
// differs and deletes services that are not listed. Running it again with
// the same input writes nothing. It carries on past a failing service and
// returns all errors.
func (d *Datapath) Sync(desired []Service) error {
	norm := make([]Service, 0, len(desired))
	want := make(map[Frontend]bool, len(desired))
	for _, s := range desired {
		s, err := s.normalize()
		if err != nil {
			return err
		}
		if want[s.Frontend] {
			return fmt.Errorf("datapath: service %v given twice", s.Frontend)
		}
		want[s.Frontend] = true
		norm = append(norm, s)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, s := range norm {
		errs = append(errs, d.apply(d.m.planUpsert(s)))
	}
	var gone []Frontend
	for fe := range d.m.masters {
		if !want[fe] {
			gone = append(gone, fe)
		}
	}
	slices.SortFunc(gone, compareFrontends)
	for _, fe := range gone {
		errs = append(errs, d.apply(d.m.planDelete(fe)))
	}
	errs = append(errs, d.apply(d.m.planStraySlots()))
	errs = append(errs, d.apply(d.m.planUnusedBackends()))
	return errors.Join(errs...)
}

// Upsert programs the given services and leaves the others alone.
func (d *Datapath) Upsert(svcs ...Service) error {
	norm := make([]Service, 0, len(svcs))
	for _, s := range svcs {
		s, err := s.normalize()
		if err != nil {
			return err
		}
		norm = append(norm, s)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, s := range norm {
		errs = append(errs, d.apply(d.m.planUpsert(s)))
	}
	return errors.Join(errs...)
}

// Delete removes the services at the given frontends; unknown ones are
// ignored.
func (d *Datapath) Delete(fes ...Frontend) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, fe := range fes {
		fe.Addr = fe.Addr.Unmap()
		errs = append(errs, d.apply(d.m.planDelete(fe)))
	}
	return errors.Join(errs...)
}

// Stats reports what is programmed and how many writes it took.
func (d *Datapath) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return Stats{
		Services:       len(d.m.masters),
		Backends:       len(d.m.backends),
		SvcEntries:     d.m.svcEntries(),
		BackendEntries: len(d.m.backends),
		MapSize:        int(d.cfg.MapSize),
		Writes:         d.writes,
	}
}

// Dump reads the services back from the maps themselves, backends in slot
// order. It is meant for tests and debugging.
func (d *Datapath) Dump() ([]Service, error) {
	m, err := readMirror(d.objs.CairnSvc, d.objs.CairnBackends)
	if err != nil {
		return nil, err
	}
	return m.services(), nil
}

// apply issues ops in order and stops at the first failure, so a service
// is never exposed past a write that did not happen.
func (d *Datapath) apply(ops []op) error {
	for _, o := range ops {
		if err := d.write(o); err != nil {
			return fmt.Errorf("datapath: %v: %w", o, err)
		}
		d.m.apply(o)
	}
	return nil
}

func (d *Datapath) write(o op) error {
	var err error
	switch o.kind {
	case putBackend:
		val := socklbBackend{Addr: addrWords(o.backend.Addr()), Port: portBE(o.backend.Port()), SvcId: o.svcID}
		d.writes.BackendPuts++
		err = d.objs.CairnBackends.Update(&o.id, &val, ebpf.UpdateAny)
	case putSlot:
		key := svcKey(o.fe, o.slot)
		val := socklbSvcValue{BackendId: o.id}
		d.writes.SvcPuts++
		err = d.objs.CairnSvc.Update(&key, &val, ebpf.UpdateAny)
	case putMaster:
		key := svcKey(o.fe, 0)
		val := socklbSvcValue{SvcId: o.master.id, Count: o.master.count, Flags: o.master.flags, AffinityTimeout: o.master.timeout}
		d.writes.SvcPuts++
		err = d.objs.CairnSvc.Update(&key, &val, ebpf.UpdateAny)
	case deleteMaster, deleteSlot:
		key := svcKey(o.fe, o.slot)
		d.writes.SvcDeletes++
		if err = d.objs.CairnSvc.Delete(&key); isNotFound(err) {
			err = nil
		}
	case deleteBackend:
		d.writes.BackendDeletes++
		if err = d.objs.CairnBackends.Delete(&o.id); isNotFound(err) {
			err = nil
		}
	default:
		err = fmt.Errorf("unknown op %d", o.kind)
	}
	return err
}

func svcKey(fe Frontend, slot uint16) socklbSvcKey {
	return socklbSvcKey{Addr: addrWords(fe.Addr), Port: portBE(fe.Port), Slot: slot, Proto: uint8(fe.Proto)}
}

// mapNames lists the pinned maps, as named in bpf/socklb.c.
func mapNames() []string {
	return []string{socklbMapCairnSvc, socklbMapCairnBackends, socklbMapCairnRevnat, socklbMapCairnAffinity}
}

func removeMapPins(pinPath string) error {
	for _, name := range mapNames() {
		if err := os.Remove(filepath.Join(pinPath, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("datapath: remove pinned map: %w", err)
		}
	}
	return nil
}
