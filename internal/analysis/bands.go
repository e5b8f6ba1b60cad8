package analysis

import "github.com/inferscope/inferscope/internal/report"

// Band is one band of the judgement table as another package reads it:
// alert rules and dashboards draw their thresholds from here, so they
// cannot drift from the report's notes.
type Band struct {
	// Rows are the rows the band judges ("section/row"); none for a note
	// on no row.
	Rows []string
	// Limits are the thresholds that draw the band, in the order
	// docs/notes.md states them.
	Limits []float64
	// Colour is the colour the band gives its rows.
	Colour report.Severity
	// Note is the id of the note the band makes, "" for none.
	Note string
	// Severity is the note's severity ("" for a band with no note).
	Severity report.Severity
}

// Bands returns the judgement table, in its order; the slices are copies.
func Bands() []Band {
	out := make([]Band, 0, len(judgements))
	for _, j := range judgements {
		b := Band{Rows: append([]string(nil), j.rows...), Limits: append([]float64(nil), j.limits...), Colour: j.colour, Note: j.note}
		if j.note != "" {
			b.Severity = j.severity()
		}
		out = append(out, b)
	}
	return out
}

// NoteBand returns the band that makes the note id; ok is false when no
// band does.
func NoteBand(id string) (b Band, ok bool) {
	for _, x := range Bands() {
		if x.Note == id && id != "" {
			return x, true
		}
	}
	return Band{}, false
}
