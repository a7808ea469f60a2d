package embedded

import (
	"cairn/node/runtime/embedded/cgroups"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// resourcesOf converts the CRI's limits for the cgroups package, which
// the helper binary shares and which therefore knows nothing of the
// CRI. Nil means no limits.
func resourcesOf(r *runtimeapi.LinuxContainerResources) cgroups.Resources {
	return cgroups.Resources{
		MemoryLimit: r.GetMemoryLimitInBytes(),
		CPUPeriod:   r.GetCpuPeriod(),
		CPUQuota:    r.GetCpuQuota(),
		CPUShares:   r.GetCpuShares(),
	}
}
