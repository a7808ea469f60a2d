package storage

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// Codec turns one resource type into the bytes kept in the store and back:
// Kubernetes protobuf, with the "k8s\x00" envelope naming apiVersion and
// kind, so that the values are what a Kubernetes API server would write.
//
// Decoded objects carry apiVersion and kind, so that they can be encoded
// for clients as they are, without the per-request TypeMeta writes that
// would race on objects shared through the watch cache.
type Codec struct {
	gvk        schema.GroupVersionKind
	newFunc    func() runtime.Object
	serializer *protobuf.Serializer
}

// NewCodec returns the codec for the type newFunc makes, which must be
// registered in scheme (e.g. client-go's kubernetes/scheme.Scheme).
func NewCodec(scheme *runtime.Scheme, newFunc func() runtime.Object) (*Codec, error) {
	gvks, _, err := scheme.ObjectKinds(newFunc())
	if err != nil {
		return nil, fmt.Errorf("storage: %v", err)
	}
	return &Codec{gvk: gvks[0], newFunc: newFunc, serializer: protobuf.NewSerializer(scheme, scheme)}, nil
}

// GroupVersionKind returns the kind the codec writes into the envelope.
func (c *Codec) GroupVersionKind() schema.GroupVersionKind { return c.gvk }

// Encode returns obj's stored form. obj is only read, never modified (not
// even its TypeMeta), so encoding an object other goroutines read is safe.
func (c *Codec) Encode(obj runtime.Object) ([]byte, error) {
	m, ok := obj.(interface{ Marshal() ([]byte, error) })
	if !ok {
		return nil, fmt.Errorf("storage: %T cannot be encoded as protobuf", obj)
	}
	raw, err := m.Marshal()
	if err != nil {
		return nil, fmt.Errorf("storage: encoding %s: %v", c.gvk.Kind, err)
	}
	// The envelope names the kind; building it here rather than setting
	// obj's TypeMeta keeps obj untouched.
	unk := &runtime.Unknown{
		TypeMeta: runtime.TypeMeta{APIVersion: c.gvk.GroupVersion().String(), Kind: c.gvk.Kind},
		Raw:      raw,
	}
	var buf bytes.Buffer
	if err := c.serializer.Encode(unk, &buf); err != nil {
		return nil, fmt.Errorf("storage: encoding %s: %v", c.gvk.Kind, err)
	}
	return buf.Bytes(), nil
}

// Decode returns a new object decoded from a stored value.
func (c *Codec) Decode(data []byte) (runtime.Object, error) {
	obj, gvk, err := c.serializer.Decode(data, nil, c.newFunc())
	if err != nil {
		return nil, fmt.Errorf("storage: decoding %s: %v", c.gvk.Kind, err)
	}
	if gvk != nil && *gvk != c.gvk {
		return nil, fmt.Errorf("storage: stored value is a %s, want %s", gvk, c.gvk)
	}
	obj.GetObjectKind().SetGroupVersionKind(c.gvk)
	return obj, nil
}
