package kubelet

import (
	"sort"
	"strconv"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// instanceState is where one container instance is in its life.
type instanceState int

const (
	stateCreated instanceState = iota
	stateRunning
	stateExited
	stateUnknown
)

// instance is one run of a container, as the runtime reports it.
type instance struct {
	ID           string
	RestartCount int32
	State        instanceState
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int32
	// Reason is the runtime's (OOMKilled, Error, Completed...).
	Reason  string
	Message string
	// Image is the image as the runtime names it; ImageRef its digest.
	Image, ImageRef string
	LogPath         string
	// Hash is the containerHash of the spec it was made from.
	Hash string
}

// ranFor is how long an exited instance ran.
func (i *instance) ranFor() time.Duration {
	if i.StartedAt.IsZero() || i.FinishedAt.Before(i.StartedAt) {
		return 0
	}
	return i.FinishedAt.Sub(i.StartedAt)
}

// containerView is what the kubelet knows of one container of a pod: its
// newest instance and the one before.
type containerView struct {
	Latest, Previous *instance
}

func nanos(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// instanceOf converts a runtime status.
func instanceOf(s *runtimeapi.ContainerStatus) *instance {
	i := &instance{
		ID:         s.Id,
		CreatedAt:  nanos(s.CreatedAt),
		StartedAt:  nanos(s.StartedAt),
		FinishedAt: nanos(s.FinishedAt),
		ExitCode:   s.ExitCode,
		Reason:     s.Reason,
		Message:    s.Message,
		ImageRef:   s.ImageRef,
		LogPath:    s.LogPath,
		Hash:       s.Annotations[annotationHash],
	}
	if s.Image != nil {
		i.Image = s.Image.Image
	}
	if n, err := strconv.Atoi(s.Annotations[annotationRestartCount]); err == nil {
		i.RestartCount = int32(n)
	} else if s.Metadata != nil {
		i.RestartCount = int32(s.Metadata.Attempt)
	}
	switch s.State {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		i.State = stateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		i.State = stateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		i.State = stateExited
	default:
		i.State = stateUnknown
	}
	return i
}

// viewsOf groups instances by container name, newest first, and keeps
// the two newest of each.
func viewsOf(byName map[string][]*instance) map[string]containerView {
	out := make(map[string]containerView, len(byName))
	for name, list := range byName {
		sortNewestFirst(list)
		v := containerView{Latest: list[0]}
		if len(list) > 1 {
			v.Previous = list[1]
		}
		out[name] = v
	}
	return out
}

// sortNewestFirst orders instances by restart count, then creation.
func sortNewestFirst(list []*instance) {
	sort.SliceStable(list, func(a, b int) bool {
		if list[a].RestartCount != list[b].RestartCount {
			return list[a].RestartCount > list[b].RestartCount
		}
		return list[a].CreatedAt.After(list[b].CreatedAt)
	})
}
