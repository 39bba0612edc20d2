package edm

import (
	"errors"
	"fmt"
	"io"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// Stats are the feature statistics FID compares: the mean and the
// covariance (row-major, Dim×Dim) of N feature vectors.
type Stats struct {
	Dim   int
	N     int // number of feature vectors; 0 for reference statistics
	Mu    []float64
	Sigma []float64
}

// featureChunkRows is how many feature rows are accumulated at a time.
const featureChunkRows = 1024

// ReadFeatures reads the features the runtime wrote (a .npy array of shape
// (n, dim), float32 or float64, nothing after it) and returns their
// statistics with EDM's conventions (fid.py, calculate_inception_stats):
// features are widened to float64, mu is their mean, and sigma is
// (Σ x xᵀ − n·mu muᵀ) / (n − 1), the unbiased covariance. Every value must
// be finite. The input is untrusted: a wrong shape, a short or overlong
// file or a non-finite value is an error.
func ReadFeatures(r io.Reader, n, dim int) (Stats, error) {
	const what = "features"
	if n < 2 {
		return Stats{}, fmt.Errorf("FID needs at least 2 feature vectors, got %d", n)
	}
	if dim < 1 || dim > 1<<14 {
		return Stats{}, fmt.Errorf("feature dimension %d out of range", dim)
	}
	h, err := readNPYHeader(r, what, int64(n)*int64(dim)*8)
	if err != nil {
		return Stats{}, err
	}
	if !equalShape(h.Shape, []int{n, dim}) {
		return Stats{}, npyErr(what, "shape %v, want [%d %d]", h.Shape, n, dim)
	}
	sum := make([]float64, dim)
	xtx := blas64.General{Rows: dim, Cols: dim, Stride: dim, Data: make([]float64, dim*dim)}
	chunk := make([]float64, featureChunkRows*dim)
	for done := 0; done < n; {
		k := min(featureChunkRows, n-done)
		rows := chunk[:k*dim]
		if err := readFloats(r, h, what, rows); err != nil {
			return Stats{}, err
		}
		for i := 0; i < k; i++ {
			row := rows[i*dim : (i+1)*dim]
			for j, v := range row {
				sum[j] += v
			}
		}
		x := blas64.General{Rows: k, Cols: dim, Stride: dim, Data: rows}
		blas64.Gemm(blas.Trans, blas.NoTrans, 1, x, x, 1, xtx)
		done += k
	}
	if err := expectEOF(r, what); err != nil {
		return Stats{}, err
	}
	st := Stats{Dim: dim, N: n, Mu: make([]float64, dim), Sigma: xtx.Data}
	for j := range sum {
		st.Mu[j] = sum[j] / float64(n)
	}
	for i := 0; i < dim; i++ {
		for j := 0; j <= i; j++ {
			// Gemm may round the two triangles differently; take one.
			v := (xtx.Data[j*dim+i] - float64(n)*st.Mu[i]*st.Mu[j]) / float64(n-1)
			st.Sigma[i*dim+j], st.Sigma[j*dim+i] = v, v
		}
	}
	return st, nil
}

// FrechetDistance returns the Fréchet distance between two Gaussians,
//
//	‖mu_a − mu_b‖² + tr(Σa + Σb − 2·sqrtm(Σa·Σb)),
//
// the FID of EDM's fid.py, which takes the real part of
// scipy.linalg.sqrtm(Σa·Σb). For symmetric positive semi-definite Σa and Σb
// the product is similar to Σa^½·Σb·Σa^½, so the trace of its square root
// is Σ √λᵢ over the eigenvalues λᵢ of that symmetric matrix; eigenvalues
// below zero (rounding) contribute nothing, as the real part of their
// square roots does in scipy. Both are computed with symmetric
// eigendecompositions, which are stable where scipy's Schur method is not.
func FrechetDistance(a, b Stats) (float64, error) {
	d := a.Dim
	if d < 1 || b.Dim != d || len(a.Mu) != d || len(b.Mu) != d || len(a.Sigma) != d*d || len(b.Sigma) != d*d {
		return 0, errors.New("fid: statistics of different or invalid dimensions")
	}
	m := 0.0
	for i := range a.Mu {
		diff := a.Mu[i] - b.Mu[i]
		m += diff * diff
	}
	trA, trB := 0.0, 0.0
	for i := 0; i < d; i++ {
		trA += a.Sigma[i*d+i]
		trB += b.Sigma[i*d+i]
	}
	trSqrt, err := traceSqrtProduct(a.Sigma, b.Sigma, d)
	if err != nil {
		return 0, err
	}
	fid := m + trA + trB - 2*trSqrt
	if math.IsNaN(fid) || math.IsInf(fid, 0) {
		return 0, errors.New("fid: result is not finite")
	}
	return fid, nil
}

// maxCholeskyCond is the largest condition number for which the Cholesky
// route is used; worse-conditioned covariances take the eigenvector route.
const maxCholeskyCond = 1e10

// traceSqrtProduct returns tr(sqrtm(A·B)) for symmetric positive
// semi-definite A and B (row-major d×d): the sum of the square roots of the
// eigenvalues of A·B, negative ones (rounding) counted as zero.
//
// With a well-conditioned Cholesky factor A = L·Lᵀ, A·B is similar to the
// symmetric Lᵀ·B·L, whose eigenvalues are all that is computed (the same
// holds with A and B swapped). Otherwise A = U·diag(w)·Uᵀ and, with
// V = U·diag(√w), A·B is similar to Vᵀ·B·V: exact for singular A, but the
// eigenvectors make it several times slower.
func traceSqrtProduct(a, b []float64, d int) (float64, error) {
	am := mat.NewSymDense(d, append([]float64(nil), a...))
	bm := mat.NewSymDense(d, append([]float64(nil), b...))
	for _, p := range [][2]*mat.SymDense{{am, bm}, {bm, am}} {
		var ch mat.Cholesky
		if !ch.Factorize(p[0]) || ch.Cond() > maxCholeskyCond {
			continue
		}
		var tri mat.TriDense
		ch.LTo(&tri)
		l := mat.DenseCopyOf(&tri).RawMatrix()
		other := mat.DenseCopyOf(p[1]).RawMatrix()
		// General products: gonum runs Gemm on every core.
		t := blas64.General{Rows: d, Cols: d, Stride: d, Data: make([]float64, d*d)}
		m := blas64.General{Rows: d, Cols: d, Stride: d, Data: make([]float64, d*d)}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, other, l, 0, t)
		blas64.Gemm(blas.Trans, blas.NoTrans, 1, l, t, 0, m)
		return traceSqrtSym(mat.NewDense(d, d, m.Data), d)
	}
	return traceSqrtEigen(am, bm, d)
}

// traceSqrtEigen is the eigenvector route of traceSqrtProduct.
func traceSqrtEigen(am, bm *mat.SymDense, d int) (float64, error) {
	var es mat.EigenSym
	if !es.Factorize(am, true) {
		return 0, errors.New("fid: eigendecomposition of the covariance did not converge")
	}
	w := es.Values(nil)
	var v mat.Dense
	es.VectorsTo(&v)
	for j, wj := range w {
		s := math.Sqrt(math.Max(wj, 0))
		for i := 0; i < d; i++ {
			v.Set(i, j, v.At(i, j)*s)
		}
	}
	var bv, m mat.Dense
	bv.Mul(bm, &v)
	m.Mul(v.T(), &bv)
	return traceSqrtSym(&m, d)
}

// traceSqrtSym returns Σ √max(λ, 0) over the eigenvalues λ of the
// symmetric part of m.
func traceSqrtSym(m *mat.Dense, d int) (float64, error) {
	sym := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			sym.SetSym(i, j, 0.5*(m.At(i, j)+m.At(j, i)))
		}
	}
	var es mat.EigenSym
	if !es.Factorize(sym, false) {
		return 0, errors.New("fid: eigendecomposition of the covariance product did not converge")
	}
	tr := 0.0
	for _, l := range es.Values(nil) {
		tr += math.Sqrt(math.Max(l, 0))
	}
	return tr, nil
}
