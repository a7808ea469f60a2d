package core

import (
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateVolumes checks pod volumes and returns them by name, for the
// volume mounts to refer to.
func validateVolumes(volumes []corev1.Volume, fldPath *field.Path) (map[string]corev1.VolumeSource, field.ErrorList) {
	var errs field.ErrorList
	byName := map[string]corev1.VolumeSource{}
	for i := range volumes {
		v := &volumes[i]
		idx := fldPath.Index(i)
		vErrs := validateVolumeSource(&v.VolumeSource, idx)
		if v.Name == "" {
			vErrs = append(vErrs, field.Required(idx.Child("name"), ""))
		} else {
			vErrs = append(vErrs, validateDNS1123Label(v.Name, idx.Child("name"))...)
		}
		if _, dup := byName[v.Name]; dup {
			vErrs = append(vErrs, field.Duplicate(idx.Child("name"), v.Name))
		}
		if len(vErrs) == 0 {
			byName[v.Name] = v.VolumeSource
		} else {
			errs = append(errs, vErrs...)
		}
	}
	return byName, errs
}

// volumeSourcesSet lists the JSON names of the sources set, e.g. ["emptyDir"].
func volumeSourcesSet(src *corev1.VolumeSource) []string {
	var set []string
	v := reflect.ValueOf(src).Elem()
	t := v.Type()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			set = append(set, name)
		}
	}
	return set
}

var hostPathTypes = []corev1.HostPathType{
	corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory, corev1.HostPathFileOrCreate,
	corev1.HostPathFile, corev1.HostPathSocket, corev1.HostPathCharDev, corev1.HostPathBlockDev,
}

func validateVolumeSource(src *corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	set := volumeSourcesSet(src)
	switch {
	case len(set) == 0:
		return field.ErrorList{field.Required(fldPath, "must specify a volume type")}
	case len(set) > 1:
		var errs field.ErrorList
		for _, name := range set[1:] {
			errs = append(errs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 volume type"))
		}
		return errs
	}
	var errs field.ErrorList
	switch {
	case src.HostPath != nil:
		p := fldPath.Child("hostPath")
		if src.HostPath.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		}
		if t := src.HostPath.Type; t != nil && !sets.New(hostPathTypes...).Has(*t) {
			errs = append(errs, field.NotSupported(p.Child("type"), *t, hostPathTypes))
		}
	case src.EmptyDir != nil:
		if l := src.EmptyDir.SizeLimit; l != nil && l.Sign() < 0 {
			errs = append(errs, field.Invalid(fldPath.Child("emptyDir", "sizeLimit"), l.String(), "must be greater than or equal to 0"))
		}
	case src.Secret != nil:
		p := fldPath.Child("secret")
		if src.Secret.SecretName == "" {
			errs = append(errs, field.Required(p.Child("secretName"), ""))
		}
		errs = append(errs, validateMode(src.Secret.DefaultMode, p.Child("defaultMode"))...)
		errs = append(errs, validateKeyToPaths(src.Secret.Items, p.Child("items"))...)
	case src.ConfigMap != nil:
		p := fldPath.Child("configMap")
		if src.ConfigMap.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		errs = append(errs, validateMode(src.ConfigMap.DefaultMode, p.Child("defaultMode"))...)
		errs = append(errs, validateKeyToPaths(src.ConfigMap.Items, p.Child("items"))...)
	case src.PersistentVolumeClaim != nil:
		if src.PersistentVolumeClaim.ClaimName == "" {
			errs = append(errs, field.Required(fldPath.Child("persistentVolumeClaim", "claimName"), ""))
		}
	case src.Projected != nil:
		errs = append(errs, validateMode(src.Projected.DefaultMode, fldPath.Child("projected", "defaultMode"))...)
	case src.DownwardAPI != nil:
		errs = append(errs, validateMode(src.DownwardAPI.DefaultMode, fldPath.Child("downwardAPI", "defaultMode"))...)
	}
	return errs
}

// maxFileMode is 0777: volume file modes carry permission bits only.
const maxFileMode = 0o777

func validateMode(mode *int32, fldPath *field.Path) field.ErrorList {
	if mode != nil && (*mode > maxFileMode || *mode < 0) {
		return field.ErrorList{field.Invalid(fldPath, *mode, "must be a number between 0 and 0777 (octal), both inclusive")}
	}
	return nil
}

func validateKeyToPaths(items []corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, kp := range items {
		idx := fldPath.Index(i)
		if kp.Key == "" {
			errs = append(errs, field.Required(idx.Child("key"), ""))
		}
		if kp.Path == "" {
			errs = append(errs, field.Required(idx.Child("path"), ""))
		} else {
			errs = append(errs, validateLocalDescendingPath(kp.Path, idx.Child("path"))...)
		}
		errs = append(errs, validateMode(kp.Mode, idx.Child("mode"))...)
	}
	return errs
}
