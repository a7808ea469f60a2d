package all

import (
	"cairn/controllers"
	"cairn/controllers/cronjob"
	"cairn/controllers/endpoints"
	"cairn/controllers/endpointslice"
	"cairn/controllers/garbagecollector"
	"cairn/controllers/job"
	"cairn/controllers/namespace"
	"cairn/controllers/nodeipam"
	"cairn/controllers/nodelifecycle"
	"cairn/controllers/podgc"
	"cairn/controllers/rootcacert"
	"cairn/controllers/serviceaccount"
	"cairn/controllers/serviceaccounttoken"
	"cairn/controllers/ttlafterfinished"
)

// cluster are the controllers of nodes, services, namespaces and object
// lifecycles, with Kubernetes' defaults.
func cluster() []controllers.Descriptor {
	return []controllers.Descriptor{
		garbagecollector.Descriptor(garbagecollector.Config{}),
		namespace.Descriptor(namespace.Config{}),
		serviceaccount.Descriptor(),
		serviceaccounttoken.Descriptor(),
		rootcacert.Descriptor(),
		nodelifecycle.Descriptor(nodelifecycle.Config{}),
		nodeipam.Descriptor(),
		podgc.Descriptor(podgc.Config{}),
		endpoints.Descriptor(),
		endpointslice.Descriptor(endpointslice.Config{}),
		job.Descriptor(job.Config{}),
		ttlafterfinished.Descriptor(),
		cronjob.Descriptor(),
	}
}
