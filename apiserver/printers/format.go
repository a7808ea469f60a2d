package printers

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// none is what kubectl shows for an empty value in most columns.
const none = "<none>"

// unset is what kubectl shows for an optional field left nil.
const unset = "<unset>"

// orNone returns s, or "<none>" when s is empty.
func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}

// containerCells lays out container names and images on one line each,
// comma-separated, for the wide CONTAINERS and IMAGES columns.
func containerCells(containers []corev1.Container) (names, images string) {
	n := make([]string, len(containers))
	im := make([]string, len(containers))
	for i, c := range containers {
		n[i], im[i] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(im, ",")
}

// maxListed is how many entries list cells (ENDPOINTS, PORTS) show before
// summarizing the rest as "+ N more...".
const maxListed = 3

// shortList joins the first maxListed of entries (total is how many there
// are in all) and says how many were left out, as kubectl does.
func shortList(entries []string, total int) string {
	s := strings.Join(entries, ",")
	if total > len(entries) {
		return fmt.Sprintf("%s + %d more...", s, total-len(entries))
	}
	return s
}

// boolString is how kubectl shows booleans held in string cells.
func boolString(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// boolPtrString is boolString for optional booleans.
func boolPtrString(b *bool) string {
	if b == nil {
		return unset
	}
	return boolString(*b)
}

// replicaCount reads an optional replica count. The API defaults a nil
// count to 1 before storing; showing 1 keeps undefaulted objects (made by
// hand in tests or read from another store) consistent with that.
func replicaCount(r *int32) int64 {
	if r == nil {
		return 1
	}
	return int64(*r)
}

// accessModes abbreviates volume access modes (RWO, ROX, RWX, RWOP) in
// the fixed order kubectl uses, without duplicates.
func accessModes(modes []corev1.PersistentVolumeAccessMode) string {
	has := map[corev1.PersistentVolumeAccessMode]bool{}
	for _, m := range modes {
		has[m] = true
	}
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{
		{corev1.ReadWriteOnce, "RWO"},
		{corev1.ReadOnlyMany, "ROX"},
		{corev1.ReadWriteMany, "RWX"},
		{corev1.ReadWriteOncePod, "RWOP"},
	} {
		if has[m.mode] {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

// sortedUnique returns the distinct non-empty values of in, sorted.
func sortedUnique(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// storageClassAnnotation is the beta annotation that named a claim's or
// volume's class before spec.storageClassName; it still wins when set.
const storageClassAnnotation = "volume.beta.kubernetes.io/storage-class"

// storageClassOf returns the storage class named by meta annotations or
// the spec field, or "" for none.
func storageClassOf(annotations map[string]string, specClass *string) string {
	if c, ok := annotations[storageClassAnnotation]; ok {
		return c
	}
	if specClass != nil {
		return *specClass
	}
	return ""
}
