package apiserver

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Media types the API speaks, as Kubernetes does.
const (
	mediaJSON     = "application/json"
	mediaYAML     = "application/yaml"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
)

// apiScheme holds every served type plus meta.k8s.io (Table,
// PartialObjectMetadata), which client-go's scheme lacks. It is built once
// and only read afterwards.
var apiScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := metav1.AddMetaToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// codecs serializes API objects in every media type clients use.
var codecs = serializer.NewCodecFactory(apiScheme)

// strictJSON rejects unknown and duplicate fields, for fieldValidation=Strict.
var strictJSON = json.NewSerializerWithOptions(json.DefaultMetaFactory, apiScheme, apiScheme, json.SerializerOptions{Strict: true})

// outputMedia picks the response media type from the Accept header.
type outputMedia struct {
	mediaType string
	// as is the meta.k8s.io/v1 kind sent instead of the object itself
	// (asTable, asPartial, asPartialList), empty for the object.
	as string
}

// The meta.k8s.io/v1 kinds a client may ask for instead of the object, as
// in Accept: application/json;as=Table;g=meta.k8s.io;v=v1.
const (
	asTable       = "Table"
	asPartial     = "PartialObjectMetadata"
	asPartialList = "PartialObjectMetadataList"
)

// table reports whether the client asked for a Table.
func (m outputMedia) table() bool { return m.as == asTable }

// negotiateOutput takes the first Accept entry the server can serve, as
// Kubernetes does: the object in JSON, YAML or protobuf, a Table in JSON,
// or object metadata (PartialObjectMetadata, PartialObjectMetadataList)
// in any of the three, which client-go's metadata client and informers
// ask for. Nothing acceptable gets JSON.
func negotiateOutput(r *http.Request) outputMedia {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if mt == "*/*" || mt == "application/*" {
			mt = mediaJSON
		}
		switch mt {
		case mediaJSON, mediaYAML, mediaProtobuf:
		default:
			continue
		}
		as := params["as"]
		switch {
		case as == "":
			return outputMedia{mediaType: mt}
		case params["g"] != metav1.GroupName || params["v"] != metav1.SchemeGroupVersion.Version:
			continue
		case as == asTable && mt == mediaJSON, as == asPartial, as == asPartialList:
			return outputMedia{mediaType: mt, as: as}
		}
	}
	return outputMedia{mediaType: mediaJSON}
}

// encoderFor returns an encoder that writes objects of gv in media.
func encoderFor(media string, gv schema.GroupVersion) (runtime.Encoder, error) {
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), media)
	if !ok {
		return nil, fmt.Errorf("apiserver: unsupported media type %q", media)
	}
	// Tables and Status are meta.k8s.io/v1 and v1 objects whatever the
	// resource's group.
	return codecs.EncoderForVersion(info.Serializer, schema.GroupVersions{gv, metav1.SchemeGroupVersion, {Version: "v1"}}), nil
}

// decodeBody decodes a request body into into, by its Content-Type.
// strict rejects unknown or duplicate fields (JSON and YAML).
func decodeBody(r *http.Request, body []byte, into runtime.Object, strict bool) error {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil {
		mt = mediaJSON
	}
	var dec runtime.Decoder
	switch {
	case mt == mediaJSON && strict:
		dec = strictJSON
	case mt == mediaYAML && strict:
		dec = json.NewSerializerWithOptions(json.DefaultMetaFactory, apiScheme, apiScheme, json.SerializerOptions{Yaml: true, Strict: true})
	default:
		info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mt)
		if !ok {
			return errUnsupportedMediaType(mt)
		}
		dec = info.Serializer
	}
	obj, _, err := dec.Decode(body, nil, into)
	if err != nil {
		if runtime.IsStrictDecodingError(err) {
			return apierrors.NewBadRequest(err.Error())
		}
		return apierrors.NewBadRequest(fmt.Sprintf("the body of the request could not be decoded: %v", err))
	}
	if obj != into {
		return apierrors.NewBadRequest(fmt.Sprintf("the body of the request is a %T, not a %T", obj, into))
	}
	return nil
}

// errUnsupportedMediaType is Kubernetes' 415 for a body it cannot read.
func errUnsupportedMediaType(mt string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s", mediaJSON, mediaYAML, mediaProtobuf) + " (got " + mt + ")",
	}}
}
