package job

import (
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// noIndex is the index of a pod that has none (or an unreadable one).
const noIndex = -1

// indexSet is a set of completion indexes, written in status as sorted
// intervals: "1,3-5,7".
type indexSet map[int]bool

// parseIndexes reads a completedIndexes string, ignoring indexes at or
// beyond completions (completions may have shrunk) and garbage.
func parseIndexes(s string, completions int) indexSet {
	out := indexSet{}
	if s == "" {
		return out
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for i := a; i <= b && i < completions; i++ {
			if i >= 0 {
				out[i] = true
			}
		}
	}
	return out
}

// String writes the set as sorted intervals.
func (s indexSet) String() string {
	idx := make([]int, 0, len(s))
	for i := range s {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var b strings.Builder
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(idx[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(idx[j]))
		}
		i = j + 1
	}
	return b.String()
}

// podIndex returns the completion index of pod, from its annotation
// (the label is a copy for selection), or noIndex.
func podIndex(pod *corev1.Pod) int {
	v, ok := pod.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		v, ok = pod.Labels[batchv1.JobCompletionIndexAnnotation]
	}
	if !ok {
		return noIndex
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 {
		return noIndex
	}
	return i
}
