// Package printers renders API objects as the metav1.Table that clients ask
// for with `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, so that
// `kubectl get` shows the columns users know from Kubernetes: READY, STATUS
// and RESTARTS for pods, UP-TO-DATE for deployments, and so on.
//
// Column names, order, priorities and cell values follow the kube-apiserver's
// own printers. Kinds without a printer get Kubernetes' default table
// (NAME and CREATED AT), which is also what Roles and ClusterRoles use.
package printers
