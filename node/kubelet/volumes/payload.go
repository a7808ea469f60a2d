package volumes

import (
	"fmt"
	"os"
	"sort"

	"cairn/node/kubelet/downward"

	corev1 "k8s.io/api/core/v1"
)

// defaultMode is the mode of volume files whose source says none.
const defaultMode = 0o644

func modeOf(item, def *int32) os.FileMode {
	switch {
	case item != nil:
		return os.FileMode(*item)
	case def != nil:
		return os.FileMode(*def)
	}
	return defaultMode
}

// keyedPayload projects data (a config map's or a secret's) to files:
// every key when items is empty, else the listed keys at their paths.
// A listed key that is missing is an error unless optional.
func keyedPayload(kind, name string, data map[string][]byte, items []corev1.KeyToPath, def *int32, optional bool) (map[string]File, error) {
	out := map[string]File{}
	if len(items) == 0 {
		for k, v := range data {
			out[k] = File{Data: v, Mode: modeOf(nil, def)}
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("configured to use key %s of %s %s, which does not exist", it.Key, kind, name)
		}
		out[it.Path] = File{Data: v, Mode: modeOf(it.Mode, def)}
	}
	return out, nil
}

// ConfigMapPayload is the content of a configMap volume or projection;
// cm is nil when the config map does not exist (and is optional).
func ConfigMapPayload(cm *corev1.ConfigMap, items []corev1.KeyToPath, def *int32, optional bool) (map[string]File, error) {
	if cm == nil {
		return map[string]File{}, nil
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyedPayload("configmap", cm.Name, data, items, def, optional)
}

// SecretPayload is the content of a secret volume or projection; s is
// nil when the secret does not exist (and is optional).
func SecretPayload(s *corev1.Secret, items []corev1.KeyToPath, def *int32, optional bool) (map[string]File, error) {
	if s == nil {
		return map[string]File{}, nil
	}
	return keyedPayload("secret", s.Name, s.Data, items, def, optional)
}

// DownwardPayload is the content of a downwardAPI volume or projection.
func DownwardPayload(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, def *int32, ips downward.PodIPs, allocatable corev1.ResourceList) (map[string]File, error) {
	out := map[string]File{}
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = downward.FieldValue(pod, it.FieldRef.FieldPath, ips)
		case it.ResourceFieldRef != nil:
			c, ok := downward.FindContainer(pod, it.ResourceFieldRef.ContainerName)
			if !ok {
				return nil, fmt.Errorf("downwardAPI item %s: no container %q", it.Path, it.ResourceFieldRef.ContainerName)
			}
			v, err = downward.ResourceValue(c, it.ResourceFieldRef, allocatable)
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		out[it.Path] = File{Data: []byte(v), Mode: modeOf(it.Mode, def)}
	}
	return out, nil
}

// merge adds src to dst; a path given twice is an error, as Kubernetes
// refuses conflicting projections.
func merge(dst, src map[string]File) error {
	keys := make([]string, 0, len(src))
	for k := range src {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, dup := dst[k]; dup {
			return fmt.Errorf("conflicting projected path %s", k)
		}
		dst[k] = src[k]
	}
	return nil
}
