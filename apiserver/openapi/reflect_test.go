package openapi

import (
	"reflect"
	"strings"
	"testing"
)

func TestDefinitionErrors(t *testing.T) {
	type withChan struct {
		C chan int `json:"c"`
	}
	type intKeys struct {
		M map[int]string `json:"m"`
	}
	tests := []struct {
		name string
		typ  reflect.Type
		want string
	}{
		{"NotAStruct", reflect.TypeFor[string](), "not a named struct type"},
		{"UnsupportedField", reflect.TypeFor[withChan](), "withChan.C: cannot describe chan int"},
		{"NonStringMapKey", reflect.TypeFor[intKeys](), "intKeys.M: map key int is not a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newDefinitions().add(tt.typ)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}
