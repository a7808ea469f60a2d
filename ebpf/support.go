package ebpf

import (
	"errors"
	"path/filepath"

	"cairn/ebpf/datapath"
)

// DefaultPinRoot is the bpffs directory under which each node's maps and
// links are pinned, in a sub-directory named after the node.
const DefaultPinRoot = "/sys/fs/bpf/cairn"

// CheckSupport reports the first capability, mount or kernel feature that
// cfg lacks, in a sentence that tells the operator what to do, or nil
// when the proxy can run. Empty paths are checked at their defaults.
// NewProxy runs it too; an agent can call it first to fail fast.
func CheckSupport(cfg ProxyConfig) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	return datapath.CheckSupport(cfg.datapathConfig())
}

func (c ProxyConfig) withDefaults() (ProxyConfig, error) {
	if c.NodeName == "" {
		return c, errors.New("ebpf: NodeName is required")
	}
	if c.CgroupPath == "" {
		mnt, err := datapath.Cgroup2Mount()
		if err != nil {
			return c, err
		}
		c.CgroupPath = mnt
	}
	if c.PinPath == "" {
		c.PinPath = filepath.Join(DefaultPinRoot, c.NodeName)
	}
	if c.ResyncPeriod == 0 {
		c.ResyncPeriod = defaultResync
	}
	return c, nil
}

func (c ProxyConfig) datapathConfig() datapath.Config {
	return datapath.Config{CgroupPath: c.CgroupPath, PinPath: c.PinPath, MapSize: c.MapSize, Logger: c.Logger}
}
