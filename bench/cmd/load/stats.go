package main

import (
	"math"
	"slices"
)

// percentile returns the p-th percentile (0..100) of xs, sorting xs in
// place; NaN for no samples.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	if !slices.IsSorted(xs) {
		slices.Sort(xs)
	}
	i := int(math.Ceil(p/100*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// finite are the finite values of xs, in a new slice.
func finite(xs []float64) []float64 {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	return v
}

// median of the finite values of xs (NaN for none); xs is not modified.
func median(xs []float64) float64 {
	v := finite(xs)
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// series collects one figure per round for each variant.
type series map[string][]float64

func (s series) add(variant string, x float64) { s[variant] = append(s[variant], x) }

func (s series) median(variant string) float64 { return median(s[variant]) }
