package storebench

import (
	"context"
	"math/rand/v2"
)

// measurePut measures puts of random keys of the keyspace, first with every
// client at once (throughput) and then with a single client (latency without
// queueing).
func (r *runner) measurePut(ctx context.Context) ([]Result, error) {
	value := randomValue(r.cfg.ValueSize)
	var results []Result
	for _, clients := range []int{r.cfg.Clients, 1} {
		res, err := r.measure(ctx, "put", clients, func(ctx context.Context, p pool, w int, rnd *rand.Rand) error {
			_, err := p.get(w).Put(ctx, keyOf(rnd.IntN(r.cfg.Keyspace), r.cfg.KeySize), string(value))
			return err
		})
		if err != nil {
			return results, err
		}
		results = append(results, res)
		if r.cfg.Clients == 1 {
			break
		}
	}
	return results, nil
}

// randomValue returns incompressible bytes, so that neither side gains from
// compressing a repetitive value.
func randomValue(size int) []byte {
	v := make([]byte, size)
	for i := range v {
		v[i] = byte(rand.Uint32())
	}
	return v
}
