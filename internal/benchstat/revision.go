package benchstat

import (
	"context"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// StoreRevision is the store's revision, as a list reports it: it grows by
// one with every write (of pods, bindings, statuses, events, leases), each
// one a Raft commit.
func StoreRevision(ctx context.Context, client kubernetes.Interface) (int64, error) {
	l, err := client.CoreV1().ConfigMaps(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, fmt.Errorf("benchstat: reading the store's revision: %w", err)
	}
	rv, err := strconv.ParseInt(l.ResourceVersion, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("benchstat: the store's revision %q: %w", l.ResourceVersion, err)
	}
	return rv, nil
}
