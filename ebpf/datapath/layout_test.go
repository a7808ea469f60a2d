package datapath

import (
	"reflect"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// TestGoStructsMatchCLayout compares every map key and value type the Go
// side writes with the struct the compiled object declares, member by
// member, so a change to bpf/socklb.c that is not regenerated, or a
// generator that lays out differently, fails here instead of corrupting
// maps.
func TestGoStructsMatchCLayout(t *testing.T) {
	spec, err := loadSocklb()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cName string
		goVal any
	}{
		{"svc_key", socklbSvcKey{}},
		{"svc_value", socklbSvcValue{}},
		{"backend", socklbBackend{}},
		{"revnat_key", socklbRevnatKey{}},
		{"revnat_value", socklbRevnatValue{}},
		{"affinity_key", socklbAffinityKey{}},
		{"affinity_value", socklbAffinityValue{}},
	}
	for _, tt := range tests {
		t.Run(tt.cName, func(t *testing.T) {
			var st *btf.Struct
			if err := spec.Types.TypeByName(tt.cName, &st); err != nil {
				t.Fatalf("struct %s not in the object's BTF: %v", tt.cName, err)
			}
			gt := reflect.TypeOf(tt.goVal)
			if int(gt.Size()) != int(st.Size) {
				t.Errorf("size: Go %d, C %d", gt.Size(), st.Size)
			}
			fields := map[string]reflect.StructField{}
			for i := range gt.NumField() {
				if f := gt.Field(i); f.Name != "_" {
					fields[f.Name] = f
				}
			}
			if len(fields) != len(st.Members) {
				t.Errorf("Go has %d fields, C has %d members", len(fields), len(st.Members))
			}
			for _, m := range st.Members {
				f, ok := fields[goName(m.Name)]
				if !ok {
					t.Errorf("member %s has no Go field %s", m.Name, goName(m.Name))
					continue
				}
				if m.BitfieldSize != 0 {
					t.Errorf("member %s is a bitfield", m.Name)
				}
				if got, want := f.Offset, uintptr(m.Offset.Bytes()); got != want {
					t.Errorf("%s: Go offset %d, C offset %d", m.Name, got, want)
				}
				size, err := btf.Sizeof(m.Type)
				if err != nil {
					t.Fatal(err)
				}
				if int(f.Type.Size()) != size {
					t.Errorf("%s: Go size %d, C size %d", m.Name, f.Type.Size(), size)
				}
			}
		})
	}
}

// goName is bpf2go's naming: snake_case to CamelCase.
func goName(c string) string {
	parts := strings.Split(c, "_")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "")
}
