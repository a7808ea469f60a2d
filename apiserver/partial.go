package apiserver

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// asPartialMetadata turns obj into its metadata, as kube-apiserver answers
// Accept: ...;as=PartialObjectMetadata (an object) or
// as=PartialObjectMetadataList (a list); asking one for the other is a
// 406. A Status is sent as it is: it is the answer, not an object.
//
// The result shares obj's metadata fields (maps and slices) without
// copying them: it is only encoded, and the watch cache's objects must
// not be written to.
func asPartialMetadata(obj runtime.Object, as string) (runtime.Object, error) {
	if _, ok := obj.(*metav1.Status); ok {
		return obj, nil
	}
	isList := meta.IsListType(obj)
	switch {
	case as == asPartial && isList:
		return nil, errNotAcceptable(fmt.Sprintf("you requested PartialObjectMetadata, but the requested object is a list (%T)", obj))
	case as == asPartialList && !isList:
		return nil, errNotAcceptable(fmt.Sprintf("you requested PartialObjectMetadataList, but the requested object is not a list (%T)", obj))
	case !isList:
		return partialOf(obj)
	}
	list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: asPartialList}}
	if l, ok := obj.(metav1.ListInterface); ok {
		list.ResourceVersion = l.GetResourceVersion()
		list.Continue = l.GetContinue()
		list.RemainingItemCount = l.GetRemainingItemCount()
	}
	err := meta.EachListItem(obj, func(item runtime.Object) error {
		p, err := partialOf(item)
		if err != nil {
			return err
		}
		list.Items = append(list.Items, *p)
		return nil
	})
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return list, nil
}

// partialOf is obj's metadata as a meta.k8s.io/v1 PartialObjectMetadata.
func partialOf(obj runtime.Object) (*metav1.PartialObjectMetadata, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("apiserver: %T has no metadata: %w", obj, err))
	}
	p := meta.AsPartialObjectMetadata(m)
	p.TypeMeta = metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: asPartial}
	return p, nil
}

// errNotAcceptable is Kubernetes' 406 for an Accept header it cannot
// satisfy.
func errNotAcceptable(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable, Message: msg,
	}}
}
