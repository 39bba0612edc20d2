package edm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

// randomStats returns statistics with a random symmetric positive definite
// covariance of dimension d.
func randomStats(d int, seed uint64) Stats {
	r := rand.New(rand.NewPCG(seed, 1))
	n := d + 16
	x := make([]float32, n*d)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	st, err := ReadFeatures(bytes.NewReader(npyBytes(fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", n, d), f32s(x...))), n, d)
	if err != nil {
		panic(err)
	}
	return st
}

// BenchmarkFrechetDistance measures the distance at the Inception feature
// dimension (2048), as computed once per FID.
func BenchmarkFrechetDistance(b *testing.B) {
	for _, d := range []int{256, 2048} {
		a, c := randomStats(d, 1), randomStats(d, 2)
		b.Run(fmt.Sprintf("dim=%d", d), func(b *testing.B) {
			for b.Loop() {
				if _, err := FrechetDistance(a, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadFeatures measures mean and covariance of 4096 feature
// vectors of dimension 2048 (a 50,000-image FID reads 12.2 times as many).
func BenchmarkReadFeatures(b *testing.B) {
	const n, d = 4096, 2048
	r := rand.New(rand.NewPCG(3, 1))
	var payload bytes.Buffer
	row := make([]float32, d)
	for i := 0; i < n; i++ {
		for j := range row {
			row[j] = float32(r.NormFloat64())
		}
		binary.Write(&payload, binary.LittleEndian, row)
	}
	file := npyBytes(fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", n, d), payload.Bytes())
	b.SetBytes(int64(len(file)))
	for b.Loop() {
		if _, err := ReadFeatures(bytes.NewReader(file), n, d); err != nil {
			b.Fatal(err)
		}
	}
}
