// Package templatehash names pod templates the way Kubernetes does, so
// that objects Cairn creates carry the names and labels kubectl and other
// tools expect: the pod-template-hash of a Deployment's ReplicaSets and of
// a DaemonSet's pods (Kubernetes' controller.ComputeHash), and the
// revision name of a StatefulSet's pods (its ControllerRevision hash).
package templatehash

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"
)

// PodTemplate returns the hash of template, perturbed by collisionCount
// when it is set: FNV-32a over the template's deep dump, then encoded in
// the alphabet Kubernetes uses for generated names. The dump walks the Go
// structure, so the hash depends on the k8s.io/api version, as it does in
// Kubernetes.
func PodTemplate(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// RevisionData is the data a StatefulSet or DaemonSet ControllerRevision
// stores for template: a strategic merge patch that replaces the owner's
// spec.template, with the template serialized as the API serializes it.
func RevisionData(template *corev1.PodTemplateSpec) ([]byte, error) {
	raw, err := json.Marshal(template)
	if err != nil {
		return nil, fmt.Errorf("templatehash: encoding the template: %w", err)
	}
	var t map[string]any
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("templatehash: decoding the template: %w", err)
	}
	t["$patch"] = "replace"
	// Map keys marshal sorted, so equal templates give equal bytes.
	return json.Marshal(map[string]any{"spec": map[string]any{"template": t}})
}

// TemplateFromRevisionData is the inverse of RevisionData.
func TemplateFromRevisionData(data []byte) (*corev1.PodTemplateSpec, error) {
	var patch struct {
		Spec struct {
			Template json.RawMessage `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data, &patch); err != nil {
		return nil, fmt.Errorf("templatehash: decoding revision data: %w", err)
	}
	var t map[string]any
	if err := json.Unmarshal(patch.Spec.Template, &t); err != nil {
		return nil, fmt.Errorf("templatehash: decoding revision data: %w", err)
	}
	delete(t, "$patch")
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("templatehash: decoding revision data: %w", err)
	}
	out := &corev1.PodTemplateSpec{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("templatehash: decoding revision data: %w", err)
	}
	return out, nil
}

// Revision returns the hash of a ControllerRevision's data, perturbed by
// probe (the owner's collision count) when it is set, as Kubernetes'
// history.HashControllerRevision does: FNV-32 (not 32a) over the bytes.
func Revision(data []byte, probe *int32) string {
	h := fnv.New32()
	h.Write(data)
	if probe != nil {
		h.Write([]byte(strconv.FormatInt(int64(*probe), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// RevisionName names an owner's ControllerRevision of hash, as
// Kubernetes' history.ControllerRevisionName does: <prefix>-<hash>, the
// prefix (the owner's name) cut to 223 characters so that the name stays
// a valid DNS subdomain.
func RevisionName(prefix, hash string) string {
	if len(prefix) > 223 {
		prefix = prefix[:223]
	}
	return prefix + "-" + hash
}
