// Package authz decides what an authenticated user may do by RBAC, the
// rbac.authorization.k8s.io/v1 roles and bindings Kubernetes uses: a
// Policy is one consistent view of every role and binding, built from the
// API server's caches, and answers requests, rules reviews and the
// escalation checks on writes of roles and bindings. It also holds the
// default roles and bindings every cluster starts with.
//
// The rules are Kubernetes': bindings only grant, a ClusterRoleBinding
// grants its role everywhere, a RoleBinding only in its namespace, and a
// ClusterRole with an aggregationRule also holds the rules of the cluster
// roles its selectors match. Who bypasses RBAC (administrators, nodes,
// join tokens) is the API server's decision, not this package's.
package authz
