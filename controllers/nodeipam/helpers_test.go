package nodeipam

import "k8s.io/apimachinery/pkg/labels"

func everythingSelector() labels.Selector { return labels.Everything() }
