package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"cairn/internal/storebench"
)

// variant is one cairn configuration's report; report is nil when that
// variant did not run.
type variant struct {
	label  string
	report *storebench.Report
}

// cell is one cairn variant's part of a row.
type cell struct {
	value   string
	ratio   string
	verdict string
}

// row is one line of the side-by-side table: the target is the same for
// every variant, each variant gets its own value, ratio and verdict.
type row struct {
	metric string
	target string
	etcd   string
	cairn  []cell
}

// comparison is the whole table: the variants in column order and the rows.
type comparison struct {
	variants []string
	rows     []row
}

// compare builds the side-by-side rows, one cairn column group per variant;
// etcd, or any variant's report, may be nil when that side did not run.
func compare(etcd *storebench.Report, cairn []variant, clients int) comparison {
	c := comparison{variants: make([]string, len(cairn))}
	for i, v := range cairn {
		c.variants[i] = v.label
	}
	for _, m := range metrics(clients) {
		r := row{metric: m.name, target: m.goal.target(), etcd: "n/a"}
		ev, eok := value(etcd, m)
		if eok {
			r.etcd = m.show(ev)
		}
		for _, v := range cairn {
			r.cairn = append(r.cairn, compareOne(m, ev, eok, v.report))
		}
		c.rows = append(c.rows, r)
	}
	return c
}

// compareOne fills one variant's cell of a metric's row.
func compareOne(m metric, ev float64, eok bool, rep *storebench.Report) cell {
	c := cell{value: "n/a"}
	cv, cok := value(rep, m)
	if cok {
		c.value = m.show(cv)
	}
	if eok && cok && ev > 0 && !m.goal.zero {
		c.ratio = fmt.Sprintf("%.2fx", cv/ev)
	}
	c.verdict = judge(m.goal, ev, eok, cv, cok)
	return c
}

func value(r *storebench.Report, m metric) (float64, bool) {
	if r == nil {
		return 0, false
	}
	return m.value(r)
}

// writeComparison prints the table aligned: the shared target, etcd, then a
// value, ratio to etcd and verdict for each cairn variant.
func writeComparison(w io.Writer, c comparison) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"metric", "target", "etcd"}
	for _, v := range c.variants {
		head = append(head, v, "ratio", "met")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range c.rows {
		line := []string{r.metric, r.target, r.etcd}
		for _, cl := range r.cairn {
			line = append(line, cl.value, cl.ratio, cl.verdict)
		}
		// Dropping empty trailing cells keeps tabwriter from padding the
		// line with spaces after its last value.
		for len(line) > 1 && line[len(line)-1] == "" {
			line = line[:len(line)-1]
		}
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	return tw.Flush()
}
