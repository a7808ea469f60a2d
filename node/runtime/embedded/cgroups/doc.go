// Package cgroups manages the cgroups of the embedded runtime's
// containers, on cgroup v1, v2 and hybrid hosts.
//
// It is a leaf package (standard library only) because the runtime's
// helper binary, which starts for every container, places processes in
// these cgroups and reads their OOM counters: its start-up must not pay
// for the agent's dependencies.
package cgroups
