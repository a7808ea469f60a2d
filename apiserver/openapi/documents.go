package openapi

import (
	"fmt"
	"sync"

	"cairn/apiserver/registry"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
)

// Documents are the rendered OpenAPI documents of a set of resources. They
// are immutable once built and safe for concurrent use.
type Documents struct {
	v2JSON []byte
	v2Hash string
	// v2Proto converts v2JSON on first use: only clients that fall back
	// from v3 ask for it, and the conversion is the slowest step.
	v2Proto func() ([]byte, error)
	// v3 is keyed by discovery path, e.g. "apis/apps/v1".
	v3          map[string]v3Document
	v3Discovery []byte
}

type v3Document struct {
	json []byte
	hash string
}

// v3DiscoveryDoc is the /openapi/v3 index, the form client-go reads.
type v3DiscoveryDoc struct {
	Paths map[string]v3DiscoveryEntry `json:"paths"`
}

type v3DiscoveryEntry struct {
	ServerRelativeURL string `json:"serverRelativeURL"`
}

// Build renders the documents of resources.
func Build(resources []*registry.Resource, opts Options) (*Documents, error) {
	s, err := buildSpec(resources)
	if err != nil {
		return nil, err
	}
	d := &Documents{v3: map[string]v3Document{}}
	if d.v2JSON, err = s.renderV2(opts); err != nil {
		return nil, err
	}
	d.v2Hash = hashOf(d.v2JSON)
	d.v2Proto = sync.OnceValues(func() ([]byte, error) { return toProtobufV2(d.v2JSON) })
	index := v3DiscoveryDoc{Paths: map[string]v3DiscoveryEntry{}}
	for _, gv := range s.gvs {
		b, err := s.renderV3(gv, opts)
		if err != nil {
			return nil, err
		}
		key := v3Path(gv)
		doc := v3Document{json: b, hash: hashOf(b)}
		d.v3[key] = doc
		index.Paths[key] = v3DiscoveryEntry{ServerRelativeURL: "/openapi/v3/" + key + "?hash=" + doc.hash}
	}
	if d.v3Discovery, err = marshal(index); err != nil {
		return nil, err
	}
	return d, nil
}

// V2JSON returns the Swagger 2.0 document as JSON.
func (d *Documents) V2JSON() []byte { return d.v2JSON }

// V2Protobuf returns the Swagger 2.0 document in the gnostic protobuf form
// client-go's discovery client asks for.
func (d *Documents) V2Protobuf() ([]byte, error) { return d.v2Proto() }

// V3Discovery returns the /openapi/v3 index: one URL, with a content hash,
// per group-version.
func (d *Documents) V3Discovery() []byte { return d.v3Discovery }

// V3 returns the OpenAPI 3.0 document of a group-version by its discovery
// path ("api/v1", "apis/apps/v1") and its hash; ok is false for unknown
// paths.
func (d *Documents) V3(path string) (doc []byte, hash string, ok bool) {
	v, ok := d.v3[path]
	return v.json, v.hash, ok
}

func toProtobufV2(doc []byte) ([]byte, error) {
	parsed, err := openapiv2.ParseDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: parsing the v2 document: %w", err)
	}
	b, err := proto.Marshal(parsed)
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding the v2 document: %w", err)
	}
	return b, nil
}
