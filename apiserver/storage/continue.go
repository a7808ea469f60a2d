package storage

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// continueToken is what a paginated list hands back to read the next
// page: the revision the list reads at and the key (relative to the listed
// prefix) to start from. It travels base64-encoded JSON, as Kubernetes'
// tokens do, and is opaque to clients.
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

const continueTokenVersion = "meta.k8s.io/v1"

// encodeContinue returns the token to list keyPrefix from just after
// lastKey at rev.
func encodeContinue(keyPrefix, lastKey string, rev int64) (string, error) {
	b, err := json.Marshal(continueToken{APIVersion: continueTokenVersion, ResourceVersion: rev, StartKey: lastKey[len(keyPrefix):] + "\x00"})
	if err != nil {
		return "", fmt.Errorf("storage: encoding continue token: %v", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// decodeContinue returns the revision and the absolute start key a token
// names; a malformed token is a 400.
func decodeContinue(token, keyPrefix string) (int64, string, error) {
	bad := func(why string) error {
		return apierrors.NewBadRequest(fmt.Sprintf("continue key is not valid: %s", why))
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, "", bad("not base64")
	}
	var t continueToken
	if err := json.Unmarshal(b, &t); err != nil {
		return 0, "", bad("not a continue token")
	}
	switch {
	case t.APIVersion != continueTokenVersion:
		return 0, "", bad(fmt.Sprintf("unknown version %q", t.APIVersion))
	case t.ResourceVersion <= 0:
		return 0, "", bad("no resource version")
	case t.StartKey == "":
		return 0, "", bad("no start key")
	}
	return t.ResourceVersion, keyPrefix + t.StartKey, nil
}
