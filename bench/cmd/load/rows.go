package main

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// order is the variants of round r, rotated so that no variant always
// runs first or right after the same one.
func (s *suite) order(r int) []variant {
	n := len(s.variants)
	out := make([]variant, n)
	for i := range n {
		out[i] = s.variants[(i+r)%n]
	}
	return out
}

func (s *suite) unaryRows() error {
	p := s.plan
	for _, c := range p.concs {
		row := unaryRow{conc: c, rps: series{}, p50: series{}, p99: series{}, added: series{}, cpu: series{}}
		for r := range p.rounds {
			p50 := map[string]float64{}
			for _, v := range s.order(r) {
				res, err := unaryLoad(v.addr, v.unaryRequest(), c, p.unaryWarm, p.unaryDur, v.cpu)
				if err != nil {
					return fmt.Errorf("%s c=%d: %w", v.name, c, err)
				}
				if res.errors > 0 {
					return fmt.Errorf("%s c=%d: %d failed calls", v.name, c, res.errors)
				}
				row.rps.add(v.name, res.rps)
				row.p50.add(v.name, res.p50)
				row.p99.add(v.name, res.p99)
				row.cpu.add(v.name, res.cpuPerCall)
				p50[v.name] = res.p50
			}
			for _, v := range s.proxies {
				row.added.add(v, p50[v]-p50[vDirect])
			}
			logf("unary c=%d round %d: req/s %s", c, r+1, s.lastOf(row.rps, 0))
		}
		s.res.unary = append(s.res.unary, row)
	}
	return nil
}

// lastOf is each variant's latest figure in sr, for progress lines.
func (s *suite) lastOf(sr series, dec int) string {
	var b strings.Builder
	for _, v := range s.columns {
		if xs, ok := sr[v]; ok {
			fmt.Fprintf(&b, " %s %.*f", s.label(v), dec, last(xs))
		}
	}
	return strings.TrimSpace(b.String())
}

func last(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return xs[len(xs)-1]
}

func (s *suite) throughputRows() error {
	p := s.plan
	s.res.tput, s.res.tputCPU = series{}, series{}
	for r := range p.rounds {
		for _, v := range s.order(r) {
			req := v.streamRequest(streamParams{N: p.tputEvents, Size: p.eventSize})
			var cpu0 time.Duration
			if v.cpu != nil {
				cpu0 = v.cpu()
			}
			res, err := streamLoad(v.addr, req, p.tputStreams, false, p.tputEvents)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			s.res.tput.add(v.name, float64(res.records)/res.elapsed.Seconds())
			if v.cpu != nil {
				s.res.tputCPU.add(v.name, float64((v.cpu()-cpu0).Microseconds())/float64(res.records))
			}
		}
		logf("records/s round %d: %s", r+1, s.lastOf(s.res.tput, 0))
	}
	return nil
}

func (s *suite) latencyRows() error {
	p := s.plan
	s.res.lat = latencyRow{p50: series{}, p99: series{}, added50: series{}, added99: series{}}
	for r := range p.rounds {
		p50, p99 := map[string]float64{}, map[string]float64{}
		for _, v := range s.order(r) {
			req := v.streamRequest(streamParams{N: p.latEvents, Size: p.eventSize, Gap: p.latGap.String()})
			res, err := streamLoad(v.addr, req, p.latStreams, true, p.latEvents)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			p50[v.name], p99[v.name] = percentile(res.lat, 50), percentile(res.lat, 99)
			s.res.lat.p50.add(v.name, p50[v.name])
			s.res.lat.p99.add(v.name, p99[v.name])
		}
		for _, v := range s.proxies {
			s.res.lat.added50.add(v, p50[v]-p50[vDirect])
			s.res.lat.added99.add(v, p99[v]-p99[vDirect])
		}
		logf("per-event latency round %d: p50 %s; p99 %s (µs)", r+1, s.lastOf(s.res.lat.p50, 0), s.lastOf(s.res.lat.p99, 0))
	}
	return nil
}

func (s *suite) firstLineRows() error {
	p := s.plan
	s.res.ttfl50, s.res.ttfl99 = series{}, series{}
	for r := range p.rounds {
		for _, v := range s.order(r) {
			req := v.streamRequest(streamParams{N: 3, Size: p.eventSize})
			xs, err := firstLine(v.addr, req, p.ttflCount)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			s.res.ttfl50.add(v.name, percentile(xs, 50))
			s.res.ttfl99.add(v.name, percentile(xs, 99))
		}
	}
	return nil
}
