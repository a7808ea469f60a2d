package openapi

import (
	"net/http"
	"strconv"
	"strings"
)

// Media types of the documents.
const (
	mediaJSON = "application/json"
	// MediaProtobufV2 is the protobuf form of /openapi/v2, and the
	// Content-Type it is served with.
	MediaProtobufV2 = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	// mediaProtobufV2Request is the same as client-go's discovery client
	// asks for it. Its '@' is not valid in a Content-Type that client-go
	// parses, so answers always carry MediaProtobufV2.
	mediaProtobufV2Request = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
)

// Serve answers /openapi/v2, /openapi/v3 and /openapi/v3/<group-version>;
// it returns false, writing nothing, for other paths.
func (d *Documents) Serve(w http.ResponseWriter, r *http.Request) bool {
	path := r.URL.Path
	if path != "/openapi/v2" && path != "/openapi/v3" && !strings.HasPrefix(path, "/openapi/v3/") {
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "openapi: the documents are read-only", http.StatusMethodNotAllowed)
		return true
	}
	switch {
	case path == "/openapi/v2":
		d.serveV2(w, r)
	case path == "/openapi/v3":
		// The index changes with the server's resources: never cached.
		w.Header().Set("Cache-Control", "no-cache, private")
		write(w, r, mediaJSON, d.v3Discovery)
	default:
		doc, hash, ok := d.V3(strings.TrimPrefix(path, "/openapi/v3/"))
		if !ok {
			http.Error(w, "openapi: no document for "+path, http.StatusNotFound)
			return true
		}
		if _, ok := negotiate(r, mediaJSON); !ok {
			http.Error(w, "openapi: the v3 documents are served as "+mediaJSON, http.StatusNotAcceptable)
			return true
		}
		serveCached(w, r, mediaJSON, doc, hash)
	}
	return true
}

func (d *Documents) serveV2(w http.ResponseWriter, r *http.Request) {
	mt, ok := negotiate(r, mediaJSON, MediaProtobufV2, mediaProtobufV2Request)
	switch {
	case !ok:
		http.Error(w, "openapi: /openapi/v2 is served as "+mediaJSON+" or "+MediaProtobufV2, http.StatusNotAcceptable)
	case mt == mediaJSON:
		serveCached(w, r, mt, d.v2JSON, d.v2Hash)
	default:
		b, err := d.V2Protobuf()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		serveCached(w, r, MediaProtobufV2, b, d.v2Hash)
	}
}

// serveCached writes a document with its hash as ETag. A request that
// names the current hash (?hash=) may cache the answer forever: a changed
// document has another URL.
func serveCached(w http.ResponseWriter, r *http.Request, mediaType string, body []byte, hash string) {
	etag := `"` + hash + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Vary", "Accept")
	if r.URL.Query().Get("hash") == hash {
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", "Thu, 01 Jan 2099 00:00:00 GMT")
	} else {
		w.Header().Set("Cache-Control", "no-cache, private")
	}
	if match := r.Header.Get("If-None-Match"); match != "" && (match == etag || match == "*") {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	write(w, r, mediaType, body)
}

func write(w http.ResponseWriter, r *http.Request, mediaType string, body []byte) {
	w.Header().Set("Content-Type", mediaType)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// negotiate picks the first of offers that the Accept header allows,
// taking the header's entries in order; a wildcard or no header picks
// offers[0]. The protobuf media types contain '@', which the mime
// package refuses, so entries are split by hand.
func negotiate(r *http.Request, offers ...string) (string, bool) {
	header := r.Header.Get("Accept")
	if strings.TrimSpace(header) == "" {
		return offers[0], true
	}
	for _, part := range strings.Split(header, ",") {
		mt, params, _ := strings.Cut(part, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
		if refused(params) {
			continue
		}
		for _, o := range offers {
			if mt == o || mt == "*/*" || (mt == "application/*" && strings.HasPrefix(o, "application/")) {
				return o, true
			}
		}
	}
	return "", false
}

// refused reports whether media type parameters carry q=0.
func refused(params string) bool {
	for _, p := range strings.Split(params, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.EqualFold(k, "q") {
			if q, err := strconv.ParseFloat(v, 64); err == nil && q == 0 {
				return true
			}
		}
	}
	return false
}
