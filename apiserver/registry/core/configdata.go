package core

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn/apiserver/registry/internal/strategy"
)

// ConfigMapStrategy returns the rules of config maps: valid keys, at most
// 1 MiB of data, and no change at all once marked immutable.
func ConfigMapStrategy() strategy.Funcs[*corev1.ConfigMap] {
	return strategy.Funcs[*corev1.ConfigMap]{
		ValidateFunc: func(_ context.Context, cm *corev1.ConfigMap) field.ErrorList {
			return validateConfigMap(cm, nil)
		},
		ValidateUpdateFunc: func(_ context.Context, cm, old *corev1.ConfigMap) field.ErrorList {
			errs := validateConfigMap(cm, &old.ObjectMeta)
			return append(errs, validateImmutableData(old.Immutable, cm.Immutable,
				!apiequality.Semantic.DeepEqual(cm.Data, old.Data),
				!apiequality.Semantic.DeepEqual(cm.BinaryData, old.BinaryData), "binaryData")...)
		},
	}
}

func validateConfigMap(cm *corev1.ConfigMap, old *metav1.ObjectMeta) field.ErrorList {
	errs := ValidateObjectMeta(&cm.ObjectMeta, old, true, apimachineryvalidation.NameIsDNSSubdomain)
	size := 0
	for _, key := range sortedKeys(cm.Data) {
		size += len(cm.Data[key])
		errs = append(errs, validateDataKey(key, field.NewPath("data").Key(key))...)
	}
	for _, key := range sortedKeys(cm.BinaryData) {
		size += len(cm.BinaryData[key])
		p := field.NewPath("binaryData").Key(key)
		errs = append(errs, validateDataKey(key, p)...)
		if _, dup := cm.Data[key]; dup {
			errs = append(errs, field.Invalid(p, key, "duplicate of key present in data"))
		}
	}
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", corev1.MaxSecretSize))
	}
	return errs
}

func validateDataKey(key string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(fldPath, key, msg))
	}
	return errs
}

// validateImmutableData refuses changing the data of an object marked
// immutable, or unmarking it: kubelets stop watching such objects.
func validateImmutableData(oldImmutable, newImmutable *bool, dataChanged, otherChanged bool, other string) field.ErrorList {
	if oldImmutable == nil || !*oldImmutable {
		return nil
	}
	const msg = "field is immutable when `immutable` is set"
	var errs field.ErrorList
	if newImmutable == nil || !*newImmutable {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), msg))
	}
	if dataChanged {
		errs = append(errs, field.Forbidden(field.NewPath("data"), msg))
	}
	if otherChanged {
		errs = append(errs, field.Forbidden(field.NewPath(other), msg))
	}
	return errs
}

// SecretStrategy returns the rules of secrets: type Opaque by default,
// stringData merged into data, the keys each well-known type requires,
// and an immutable type.
func SecretStrategy() strategy.Funcs[*corev1.Secret] {
	return strategy.Funcs[*corev1.Secret]{
		DefaultFunc: func(s *corev1.Secret) {
			if s.Type == "" {
				s.Type = corev1.SecretTypeOpaque
			}
			// stringData is write-only: Kubernetes folds it into data on
			// every write, and it wins over data for the same key.
			if len(s.StringData) > 0 && s.Data == nil {
				s.Data = map[string][]byte{}
			}
			for k, v := range s.StringData {
				s.Data[k] = []byte(v)
			}
			s.StringData = nil
		},
		ValidateFunc: func(_ context.Context, s *corev1.Secret) field.ErrorList {
			return validateSecret(s, nil)
		},
		ValidateUpdateFunc: func(_ context.Context, s, old *corev1.Secret) field.ErrorList {
			errs := validateSecret(s, &old.ObjectMeta)
			errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.Type, old.Type, field.NewPath("type"))...)
			return append(errs, validateImmutableData(old.Immutable, s.Immutable,
				!apiequality.Semantic.DeepEqual(s.Data, old.Data), false, "")...)
		},
	}
}

func validateSecret(s *corev1.Secret, old *metav1.ObjectMeta) field.ErrorList {
	errs := ValidateObjectMeta(&s.ObjectMeta, old, true, apimachineryvalidation.NameIsDNSSubdomain)
	dataPath := field.NewPath("data")
	size := 0
	for _, key := range sortedKeys(s.Data) {
		size += len(s.Data[key])
		errs = append(errs, validateDataKey(key, dataPath.Key(key))...)
	}
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(dataPath, "", corev1.MaxSecretSize))
	}
	require := func(key string) {
		if _, ok := s.Data[key]; !ok {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		require(corev1.DockerConfigKey)
		errs = append(errs, validateJSONKey(s.Data, corev1.DockerConfigKey, dataPath)...)
	case corev1.SecretTypeDockerConfigJson:
		require(corev1.DockerConfigJsonKey)
		errs = append(errs, validateJSONKey(s.Data, corev1.DockerConfigJsonKey, dataPath)...)
	case corev1.SecretTypeBasicAuth:
		_, user := s.Data[corev1.BasicAuthUsernameKey]
		_, pass := s.Data[corev1.BasicAuthPasswordKey]
		if !user && !pass {
			errs = append(errs, field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""),
				field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		require(corev1.SSHAuthPrivateKey)
	case corev1.SecretTypeTLS:
		require(corev1.TLSCertKey)
		require(corev1.TLSPrivateKeyKey)
	case corev1.SecretTypeOpaque, "":
	default:
		for _, msg := range validation.IsQualifiedName(string(s.Type)) {
			errs = append(errs, field.Invalid(field.NewPath("type"), s.Type, msg))
		}
	}
	return errs
}

func validateJSONKey(data map[string][]byte, key string, dataPath *field.Path) field.ErrorList {
	v, ok := data[key]
	if !ok {
		return nil
	}
	var out map[string]any
	if err := json.Unmarshal(v, &out); err != nil {
		return field.ErrorList{field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error())}
	}
	return nil
}
