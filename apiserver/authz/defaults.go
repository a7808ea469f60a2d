package authz

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Groups the default bindings name.
const (
	// GroupMasters is Kubernetes' administrators' group, bound to
	// cluster-admin (the API server lets it bypass RBAC altogether).
	GroupMasters = "system:masters"
	// GroupAuthenticated holds every authenticated user.
	GroupAuthenticated = "system:authenticated"
	// GroupUnauthenticated would hold anonymous users; the API server
	// has none, but the binding keeps Kubernetes' shape.
	GroupUnauthenticated = "system:unauthenticated"
	// GroupMonitoring may read the health and metrics endpoints.
	GroupMonitoring = "system:monitoring"
)

// Labels and annotations of the default roles and bindings, as
// Kubernetes sets them.
const (
	bootstrappingLabel = "kubernetes.io/bootstrapping"
	autoupdateKey      = "rbac.authorization.kubernetes.io/autoupdate"
	aggregateToAdmin   = "rbac.authorization.k8s.io/aggregate-to-admin"
	aggregateToEdit    = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView    = "rbac.authorization.k8s.io/aggregate-to-view"
)

var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "delete", "deletecollection", "patch", "update"}
	readWrite = append(append([]string(nil), read...), write...)
)

func rule(verbs []string, groups []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

func urls(verbs []string, paths ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, NonResourceURLs: paths}
}

var (
	core        = []string{""}
	apps        = []string{"apps"}
	batch       = []string{"batch"}
	discovery   = []string{"discovery.k8s.io"}
	coordinated = []string{"coordination.k8s.io"}
	rbacGroup   = []string{rbacv1.GroupName}
	authzGroup  = []string{"authorization.k8s.io"}
)

// viewRules read a namespace's workloads, services and configuration,
// but not its secrets, nor its roles.
var viewRules = []rbacv1.PolicyRule{
	rule(read, core, "pods", "pods/log", "pods/status", "configmaps", "endpoints", "persistentvolumeclaims",
		"persistentvolumeclaims/status", "services", "services/status", "serviceaccounts", "events", "bindings"),
	rule(read, core, "namespaces", "namespaces/status"),
	rule(read, apps, "deployments", "deployments/scale", "deployments/status", "replicasets", "replicasets/scale",
		"replicasets/status", "statefulsets", "statefulsets/scale", "statefulsets/status", "daemonsets", "daemonsets/status",
		"controllerrevisions"),
	rule(read, batch, "jobs", "jobs/status", "cronjobs", "cronjobs/status"),
	rule(read, discovery, "endpointslices"),
}

// editRules change a namespace's workloads, services, configuration and
// secrets, and reach into its pods, but grant no roles. As in Kubernetes,
// they leave out pods/ephemeralcontainers (kubectl debug): a cluster's
// admission rules may not cover ephemeral containers, so an
// administrator grants them on purpose, e.g. with a ClusterRole labelled
// rbac.authorization.k8s.io/aggregate-to-edit.
var editRules = []rbacv1.PolicyRule{
	rule(read, core, "secrets", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "services/proxy"),
	rule(write, core, "pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "configmaps", "endpoints",
		"persistentvolumeclaims", "secrets", "serviceaccounts", "services", "services/proxy"),
	rule([]string{"create"}, core, "pods/eviction", "serviceaccounts/token"),
	rule([]string{"impersonate"}, core, "serviceaccounts"),
	rule(write, apps, "deployments", "deployments/scale", "replicasets", "replicasets/scale", "statefulsets",
		"statefulsets/scale", "daemonsets"),
	rule(write, batch, "jobs", "cronjobs"),
	rule(write, discovery, "endpointslices"),
	rule(readWrite, coordinated, "leases"),
}

// adminRules add the namespace's roles and bindings, and access reviews
// in it.
var adminRules = []rbacv1.PolicyRule{
	rule(readWrite, rbacGroup, "roles", "rolebindings"),
	rule([]string{"create"}, authzGroup, "localsubjectaccessreviews"),
}

// The users of `cairn scheduler` and `cairn controller-manager` run
// apart from the servers, as Kubernetes names them; the default roles of
// the same names are bound to them.
const (
	SchedulerUser         = "system:kube-scheduler"
	ControllerManagerUser = "system:kube-controller-manager"
)

// schedulerRules read what placement depends on, bind pods, preempt,
// report, and hold the scheduler's election Lease.
var schedulerRules = []rbacv1.PolicyRule{
	rule(read, core, "pods", "nodes", "namespaces", "services", "persistentvolumeclaims", "persistentvolumes", "replicationcontrollers"),
	rule(read, apps, "replicasets", "statefulsets"),
	rule(read, []string{"policy"}, "poddisruptionbudgets"),
	rule(read, []string{"storage.k8s.io"}, "*"),
	rule(read, []string{"scheduling.k8s.io"}, "priorityclasses"),
	rule([]string{"create"}, core, "bindings", "pods/binding"),
	rule([]string{"delete"}, core, "pods"),
	rule([]string{"patch", "update"}, core, "pods/status"),
	rule([]string{"create", "patch", "update"}, core, "events"),
	rule([]string{"create", "patch", "update"}, []string{"events.k8s.io"}, "events"),
	rule([]string{"create", "get", "list", "watch", "update"}, coordinated, "leases"),
}

// controllerManagerRules cover every resource: one identity runs every
// controller, which between them write nearly every kind of object.
// (Kubernetes splits this over a service account per controller.)
var controllerManagerRules = []rbacv1.PolicyRule{
	rule([]string{rbacv1.VerbAll}, []string{rbacv1.APIGroupAll}, rbacv1.ResourceAll),
}

// DefaultClusterRoles are the cluster roles every cluster starts with,
// Kubernetes' user-facing ones and those its default bindings name.
func DefaultClusterRoles() []*rbacv1.ClusterRole {
	all := []string{rbacv1.VerbAll}
	health := []string{"/healthz", "/livez", "/readyz"}
	aggregated := func(name, selector string, extra map[string]string) *rbacv1.ClusterRole {
		cr := defaultClusterRole(name, nil)
		cr.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{selector: "true"}}}}
		for k, v := range extra {
			cr.Labels[k] = v
		}
		return cr
	}
	withLabel := func(cr *rbacv1.ClusterRole, key string) *rbacv1.ClusterRole {
		cr.Labels[key] = "true"
		return cr
	}
	roles := []*rbacv1.ClusterRole{
		defaultClusterRole("cluster-admin", []rbacv1.PolicyRule{rule(all, all, rbacv1.ResourceAll), urls(all, rbacv1.NonResourceAll)}),
		defaultClusterRole("system:discovery", []rbacv1.PolicyRule{urls([]string{"get"},
			"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/")}),
		defaultClusterRole("system:public-info-viewer", []rbacv1.PolicyRule{urls([]string{"get"},
			append(health, "/version", "/version/")...)}),
		defaultClusterRole("system:basic-user", []rbacv1.PolicyRule{
			rule([]string{"create"}, authzGroup, "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule([]string{"create"}, []string{"authentication.k8s.io"}, "selfsubjectreviews"),
		}),
		defaultClusterRole("system:service-account-issuer-discovery", []rbacv1.PolicyRule{urls([]string{"get"},
			"/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/")}),
		defaultClusterRole("system:monitoring", []rbacv1.PolicyRule{urls([]string{"get"},
			append(health, "/healthz/*", "/livez/*", "/readyz/*", "/metrics")...)}),
		withLabel(defaultClusterRole("system:aggregate-to-view", viewRules), aggregateToView),
		withLabel(defaultClusterRole("system:aggregate-to-edit", editRules), aggregateToEdit),
		withLabel(defaultClusterRole("system:aggregate-to-admin", adminRules), aggregateToAdmin),
		defaultClusterRole(SchedulerUser, schedulerRules),
		defaultClusterRole(ControllerManagerUser, controllerManagerRules),
		aggregated("admin", aggregateToAdmin, nil),
		aggregated("edit", aggregateToEdit, map[string]string{aggregateToAdmin: "true"}),
		aggregated("view", aggregateToView, map[string]string{aggregateToEdit: "true"}),
	}
	// Stored with the rules aggregated, as Kubernetes' controller would
	// write them, so that `kubectl describe clusterrole admin` shows them.
	rules := aggregate(roles)
	for _, cr := range roles {
		if cr.AggregationRule != nil {
			cr.Rules = rules[cr.Name]
		}
	}
	return roles
}

// DefaultClusterRoleBindings bind the default roles as Kubernetes does.
func DefaultClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	group := func(name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
	}
	user := func(name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
	}
	bind := func(role string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{
			ObjectMeta: defaultMeta(role),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   subjects,
		}
	}
	return []*rbacv1.ClusterRoleBinding{
		bind("cluster-admin", group(GroupMasters)),
		bind("system:discovery", group(GroupAuthenticated)),
		bind("system:basic-user", group(GroupAuthenticated)),
		bind("system:public-info-viewer", group(GroupAuthenticated), group(GroupUnauthenticated)),
		bind("system:service-account-issuer-discovery", group("system:serviceaccounts")),
		bind("system:monitoring", group(GroupMonitoring)),
		bind(SchedulerUser, user(SchedulerUser)),
		bind(ControllerManagerUser, user(ControllerManagerUser)),
	}
}

func defaultClusterRole(name string, rules []rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: defaultMeta(name), Rules: rules}
}

func defaultMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{bootstrappingLabel: "rbac-defaults"},
		Annotations: map[string]string{autoupdateKey: "true"},
	}
}
