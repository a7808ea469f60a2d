package embedded

import (
	"bufio"
	"cairn/internal/rootfs"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"cairn/node/runtime/embedded/helper"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// commandLine merges the CRI command and args with the image's
// entrypoint and cmd, as Docker and Kubernetes do: a command replaces
// the entrypoint and drops the image's cmd; args replace the cmd.
func commandLine(cfg *runtimeapi.ContainerConfig, img v1.Config) ([]string, error) {
	entrypoint, cmd := img.Entrypoint, img.Cmd
	if len(cfg.GetCommand()) > 0 {
		entrypoint, cmd = cfg.GetCommand(), nil
	}
	if len(cfg.GetArgs()) > 0 {
		cmd = cfg.GetArgs()
	}
	argv := append(slices.Clone(entrypoint), cmd...)
	if len(argv) == 0 {
		return nil, fmt.Errorf("embedded: container %s has no command, and its image none either", cfg.GetMetadata().GetName())
	}
	return argv, nil
}

// environment merges the image's environment with the container's,
// which wins, and adds PATH and HOSTNAME if missing.
func environment(cfg *runtimeapi.ContainerConfig, img v1.Config, hostname string) []string {
	var keys []string
	vals := map[string]string{}
	set := func(kv string) {
		k, v, _ := strings.Cut(kv, "=")
		if _, ok := vals[k]; !ok {
			keys = append(keys, k)
		}
		vals[k] = v
	}
	for _, kv := range img.Env {
		set(kv)
	}
	for _, kv := range cfg.GetEnvs() {
		set(kv.GetKey() + "=" + string(kv.GetValue()))
	}
	if _, ok := vals["PATH"]; !ok {
		set("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	}
	if _, ok := vals["HOSTNAME"]; !ok {
		set("HOSTNAME=" + hostname)
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "=" + vals[k]
	}
	return out
}

// user is a resolved container user.
type user struct {
	uid, gid uint32
	groups   []uint32
	name     string
}

// resolveUser finds the container's uid, gid and supplementary groups
// from its security context, else from the image's USER, looking names
// up in the image's /etc/passwd and /etc/group.
func resolveUser(rootfs, imageUser string, sc *runtimeapi.LinuxContainerSecurityContext) (user, error) {
	var u user
	userPart, groupPart, _ := strings.Cut(imageUser, ":")
	if sc.GetRunAsUsername() != "" {
		userPart, groupPart = sc.GetRunAsUsername(), ""
	}
	if sc.GetRunAsUser() != nil {
		userPart, groupPart = strconv.FormatInt(sc.GetRunAsUser().GetValue(), 10), ""
	}
	passwd := readColonFile(rootfs, "/etc/passwd")
	groupFile := readColonFile(rootfs, "/etc/group")
	primary := int64(-1)
	if userPart != "" {
		if n, err := strconv.ParseUint(userPart, 10, 32); err == nil {
			u.uid = uint32(n)
			for _, e := range passwd {
				if len(e) > 3 && e[2] == userPart {
					u.name = e[0]
					primary, _ = strconv.ParseInt(e[3], 10, 64)
					break
				}
			}
		} else {
			found := false
			for _, e := range passwd {
				if len(e) > 3 && e[0] == userPart {
					uid, err1 := strconv.ParseUint(e[2], 10, 32)
					gid, err2 := strconv.ParseInt(e[3], 10, 64)
					if err1 == nil && err2 == nil {
						u.uid, u.name, primary, found = uint32(uid), e[0], gid, true
						break
					}
				}
			}
			if !found {
				return user{}, fmt.Errorf("embedded: user %q is not in the image's /etc/passwd", userPart)
			}
		}
	} else {
		u.name = "root"
		primary = 0
	}
	switch {
	case sc.GetRunAsGroup() != nil:
		u.gid = uint32(sc.GetRunAsGroup().GetValue())
	case groupPart != "":
		if n, err := strconv.ParseUint(groupPart, 10, 32); err == nil {
			u.gid = uint32(n)
			break
		}
		found := false
		for _, e := range groupFile {
			if len(e) > 2 && e[0] == groupPart {
				if n, err := strconv.ParseUint(e[2], 10, 32); err == nil {
					u.gid, found = uint32(n), true
					break
				}
			}
		}
		if !found {
			return user{}, fmt.Errorf("embedded: group %q is not in the image's /etc/group", groupPart)
		}
	case primary >= 0:
		u.gid = uint32(primary)
	}
	add := func(g uint32) {
		if g != u.gid && !slices.Contains(u.groups, g) {
			u.groups = append(u.groups, g)
		}
	}
	if u.name != "" {
		for _, e := range groupFile {
			if len(e) > 3 && slices.Contains(strings.Split(e[3], ","), u.name) {
				if n, err := strconv.ParseUint(e[2], 10, 32); err == nil {
					add(uint32(n))
				}
			}
		}
	}
	for _, g := range sc.GetSupplementalGroups() {
		add(uint32(g))
	}
	return u, nil
}

// readColonFile reads a passwd(5)-style file of the image; a missing
// file reads as empty.
func readColonFile(root, p string) [][]string {
	host, err := rootfs.ResolveIn(root, p)
	if err != nil {
		return nil
	}
	f, err := os.Open(host)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, strings.Split(line, ":"))
	}
	return out
}

// stopSignal returns the signal that asks the container to stop: the
// container's, else the image's, else SIGTERM.
func stopSignal(cfg *runtimeapi.ContainerConfig, img v1.Config) int {
	if s := cfg.GetStopSignal(); s != runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT {
		if n := unix.SignalNum(strings.TrimPrefix(s.String(), "SIGNAL_")); n != 0 {
			return int(n)
		}
	}
	if s := img.StopSignal; s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
		name := strings.ToUpper(s)
		if !strings.HasPrefix(name, "SIG") {
			name = "SIG" + name
		}
		if n := unix.SignalNum(name); n != 0 {
			return int(n)
		}
	}
	return int(unix.SIGTERM)
}

// mountsOf converts the CRI mounts to bind mounts.
func mountsOf(cfg *runtimeapi.ContainerConfig) ([]helper.Mount, error) {
	var out []helper.Mount
	for _, m := range cfg.GetMounts() {
		if m.GetImage() != nil {
			return nil, fmt.Errorf("embedded: image volumes (for %s) are not supported", m.GetContainerPath())
		}
		if !path.IsAbs(m.GetContainerPath()) || !path.IsAbs(m.GetHostPath()) {
			return nil, fmt.Errorf("embedded: mount %s -> %s: paths must be absolute", m.GetHostPath(), m.GetContainerPath())
		}
		prop := ""
		switch m.GetPropagation() {
		case runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER:
			prop = "rslave"
		case runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL:
			prop = "rshared"
		}
		out = append(out, helper.Mount{Source: m.GetHostPath(), Target: path.Clean(m.GetContainerPath()), Readonly: m.GetReadonly(), Propagation: prop})
	}
	return out, nil
}
