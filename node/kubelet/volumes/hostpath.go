package volumes

import (
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
)

// hostPath checks (or creates) the path as its type asks.
func hostPath(s *corev1.HostPathVolumeSource) (Volume, error) {
	t := corev1.HostPathUnset
	if s.Type != nil {
		t = *s.Type
	}
	info, err := os.Stat(s.Path)
	exists := err == nil
	if err != nil && !os.IsNotExist(err) {
		return Volume{}, err
	}
	fail := func(what string) (Volume, error) {
		return Volume{}, fmt.Errorf("hostPath type check failed: %s is not a %s", s.Path, what)
	}
	switch t {
	case corev1.HostPathUnset:
	case corev1.HostPathDirectoryOrCreate:
		if !exists {
			if err := os.MkdirAll(s.Path, 0o755); err != nil {
				return Volume{}, err
			}
		} else if !info.IsDir() {
			return fail("directory")
		}
	case corev1.HostPathDirectory:
		if !exists || !info.IsDir() {
			return fail("directory")
		}
	case corev1.HostPathFileOrCreate:
		if !exists {
			f, err := os.OpenFile(s.Path, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return Volume{}, err
			}
			f.Close()
		} else if !info.Mode().IsRegular() {
			return fail("file")
		}
	case corev1.HostPathFile:
		if !exists || !info.Mode().IsRegular() {
			return fail("file")
		}
	case corev1.HostPathSocket:
		if !exists || info.Mode()&os.ModeSocket == 0 {
			return fail("socket")
		}
	case corev1.HostPathCharDev:
		if !exists || info.Mode()&os.ModeCharDevice == 0 {
			return fail("character device")
		}
	case corev1.HostPathBlockDev:
		if !exists || info.Mode()&os.ModeDevice == 0 || info.Mode()&os.ModeCharDevice != 0 {
			return fail("block device")
		}
	default:
		return Volume{}, fmt.Errorf("unknown hostPath type %q", t)
	}
	return Volume{Path: s.Path}, nil
}
