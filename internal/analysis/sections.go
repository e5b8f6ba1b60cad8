package analysis

import (
	"strings"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// The report's optional sections: each is there only for a server with
// the feature it reads, and so are its windowed rows, rules and panels.
const (
	SectionSpecDecode = "spec_decode" // a drafter that has served
	SectionKVOffload  = "kv_offload"  // offload capacity
	SectionRecurrent  = "recurrent"   // a recurrent-state budget, or prompt it capped
)

// optional are the optional sections in the report's order.
var optional = []string{SectionSpecDecode, SectionKVOffload, SectionRecurrent}

// Sections says which of the report's optional sections apply to a
// server. The report, the windowed rows (internal/rates), the generated
// rules and the dashboards all decide from it, so that none of them
// shows a section the others leave out. Every section not optional
// always applies.
type Sections struct {
	SpecDecode, KVOffload, Recurrent bool
}

// AllSections applies every section: for names written without a scrape
// of the server, or when asked for every section whatever the server.
func AllSections() Sections { return Sections{SpecDecode: true, KVOffload: true, Recurrent: true} }

// SectionsOf judges from one scrape which optional sections apply: the
// speculative-decode section once a drafter has served (requests with it,
// tokens drafted, or passes verified), the KV offload section with offload
// capacity (tokens or bytes) or, for a server that publishes no capacity
// but publishes transfers only while offload is on (vLLM's offloading
// connector), with those transfers, the recurrent section with a
// checkpoint budget or prompt tokens it capped.
func SectionsOf(s *snapshot.Snapshot) Sections {
	_, capT := s.Scalar(snapshot.KVOffloadMaxTokens)
	_, capB := s.Scalar(snapshot.KVOffloadMaxBytes)
	return Sections{
		SpecDecode: s.Get(snapshot.SpecDecodeRequestsTotal) > 0 || s.Get(snapshot.SpecDecodeNumDraftTokensTotal) > 0 ||
			s.Extra[snapshot.ExtraSpecVerifyCalls] > 0,
		KVOffload: s.Get(snapshot.KVOffloadMaxTokens) > 0 || s.Get(snapshot.KVOffloadMaxBytes) > 0 || !capT && !capB && offloadTraffic(s),
		Recurrent: s.Get(snapshot.RecurrentCacheMaxBytes) > 0 || s.Get(snapshot.RecurrentCappedTokensTotal) > 0,
	}
}

// offloadTraffic reports that a server publishes KV offload transfers.
func offloadTraffic(s *snapshot.Snapshot) bool {
	_, r := s.Scalar(snapshot.KVOffloadReadBytesTotal)
	_, w := s.Scalar(snapshot.KVOffloadWrittenBytesTotal)
	return r || w
}

// Has reports whether the section (an id such as "kv_offload") applies.
func (x Sections) Has(id string) bool {
	switch id {
	case SectionSpecDecode:
		return x.SpecDecode
	case SectionKVOffload:
		return x.KVOffload
	case SectionRecurrent:
		return x.Recurrent
	}
	return true
}

// HasRow reports whether a row ("section/row") applies: its section does,
// and a row about an optional feature in another section (the Live
// section's KV offload row) with it.
func (x Sections) HasRow(row string) bool { return x.Has(RowSection(row)) }

// Left lists the optional sections that do not apply, in the report's
// order.
func (x Sections) Left() []string {
	var out []string
	for _, id := range optional {
		if !x.Has(id) {
			out = append(out, id)
		}
	}
	return out
}

// RowSection is the section a row ("section/row", or a figure id such as
// "latency/ttft_p99") belongs to for whether it applies: its own, but the
// optional section for a row that reads only that feature.
func RowSection(row string) string {
	if row == "live/kv_offload" {
		return SectionKVOffload
	}
	sec, _, _ := strings.Cut(row, "/")
	return sec
}
