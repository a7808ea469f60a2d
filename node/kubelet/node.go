package kubelet

import (
	"context"
	"fmt"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// defaultLabels are the labels every kubelet sets on its node. No
// node-role label: Kubernetes forbids kubelets to set their own role.
func (k *Kubelet) defaultLabels() map[string]string {
	return map[string]string{
		corev1.LabelHostname:      k.cfg.Hostname,
		corev1.LabelOSStable:      runtime.GOOS,
		corev1.LabelArchStable:    runtime.GOARCH,
		"beta.kubernetes.io/os":   runtime.GOOS,
		"beta.kubernetes.io/arch": runtime.GOARCH,
	}
}

func (k *Kubelet) wantedLabels() map[string]string {
	l := k.defaultLabels()
	for key, v := range k.cfg.NodeLabels {
		l[key] = v
	}
	return l
}

// register creates the Node, or takes over the one a previous run left
// (updating its labels), retrying until the API answers or ctx ends.
func (k *Kubelet) register(ctx context.Context) error {
	delay := 100 * time.Millisecond
	for {
		node, err := k.registerOnce(ctx)
		if err == nil {
			k.mu.Lock()
			k.nodeUID = string(node.UID)
			k.mu.Unlock()
			return nil
		}
		k.log.Warn("registering the node failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubelet: registering node %s: %w", k.cfg.NodeName, err)
		case <-time.After(delay):
		}
		delay = min(2*delay, 7*time.Second)
	}
}

func (k *Kubelet) registerOnce(ctx context.Context) (*corev1.Node, error) {
	nodes := k.client.CoreV1().Nodes()
	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Labels: k.wantedLabels()},
		Spec:       corev1.NodeSpec{Taints: k.cfg.Taints},
	}
	created, err := nodes.Create(ctx, want, metav1.CreateOptions{})
	if err == nil {
		k.log.Info("node registered")
		return k.writeNodeStatus(ctx, created, true)
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	existing, err := nodes.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	changed := false
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	for key, v := range k.wantedLabels() {
		if existing.Labels[key] != v {
			existing.Labels[key] = v
			changed = true
		}
	}
	if changed {
		if existing, err = nodes.Update(ctx, existing, metav1.UpdateOptions{}); err != nil {
			return nil, err
		}
	}
	k.log.Info("node already registered; taking it over")
	return k.writeNodeStatus(ctx, existing, true)
}
