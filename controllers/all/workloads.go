package all

import (
	"cairn/controllers"
	"cairn/controllers/daemonset"
	"cairn/controllers/deployment"
	"cairn/controllers/replicaset"
	"cairn/controllers/statefulset"
)

// workloads are the controllers of pods' owners.
func workloads() []controllers.Descriptor {
	return []controllers.Descriptor{
		deployment.Descriptor(),
		replicaset.Descriptor(),
		statefulset.Descriptor(),
		daemonset.Descriptor(),
	}
}
