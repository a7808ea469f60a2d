package defaultbinder_test

import (
	"context"
	"testing"

	"cairn/scheduler/framework"
	st "cairn/scheduler/internal/schedtest"
	"cairn/scheduler/plugins/defaultbinder"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestBindPostsABindingWithThePodsUID(t *testing.T) {
	pod := st.MakePod().Name("p").UID("uid-1").Obj()
	cs := fake.NewClientset(pod)
	c := st.NewCluster(t, nil, nil, st.WithClientSet(cs))
	pl := c.Plugin(t, defaultbinder.New).(framework.BindPlugin)
	if s := pl.Bind(context.Background(), framework.NewCycleState(), framework.NewPodInfo(pod), "n1"); !s.IsSuccess() {
		t.Fatal(s.AsError())
	}
	var b *v1.Binding
	for _, a := range cs.Actions() {
		if ca, ok := a.(clienttesting.CreateAction); ok && ca.GetSubresource() == "binding" {
			b = ca.GetObject().(*v1.Binding)
		}
	}
	if b == nil || b.Name != "p" || b.UID != "uid-1" || b.Target.Name != "n1" || b.Target.Kind != "Node" {
		t.Fatalf("binding = %+v", b)
	}
}
