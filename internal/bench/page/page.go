// Package page writes the bench's reports as one HTML page to look at:
// `inferscope bench -o html`.
//
// A page is one self-contained file, read offline: its stylesheet is
// inline, its charts are inline SVG drawn by package chart, and it has no
// script, font or image to fetch (its Content-Security-Policy forbids
// any). It reads in a light or a dark scheme as the reader's system
// prefers, and prints on white. Beside the charts it says the verdict and
// the notes in words, and under them the report's tables as the terminal
// writes them; every chart's numbers are in a table under it.
//
// The page is drawn from the same report value the JSON is written from,
// and every number it draws names where in that JSON it comes from
// (chart.From, and data-path on the key figures), so that a test in a
// browser holds the page to the JSON.
package page

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"

	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/units"
)

//go:embed page.css
var css string

//go:embed page.html
var layout string

var tmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"sev": func(s report.Severity) string {
		if s == "" {
			return ""
		}
		return "sev-" + string(s)
	},
}).Parse(layout))

// view is what the template lays out.
type view struct {
	Kind         string // "run", "sweep", "probe"
	Title        string
	Heading      string
	Meta         []string
	Version      string
	CSS          template.CSS
	Verdict      *verdict
	FiguresTitle string
	Figures      []figure
	Charts       []template.HTML
	NoteGroups   []noteGroup
	// Extra is HTML of the page's own (a sweep's table of steps).
	Extra   template.HTML
	Reports []titled
	Server  *titled
}

// verdict is the page's headline: what limited the server, in words.
type verdict struct {
	Label, ID, Word string
	Severity        report.Severity
	Lines           []string
}

// figure is one key figure: its text, and the JSON path and full value
// it shows.
type figure struct {
	Label, Text, Path, Value string
}

type noteGroup struct {
	Title string
	Notes report.List[report.Note]
}

type titled struct {
	Title  string
	Report *report.Report
}

func write(w io.Writer, v *view) error {
	v.CSS = template.CSS(css)
	if err := tmpl.Execute(w, v); err != nil {
		return fmt.Errorf("page: writing the HTML: %w", err)
	}
	return nil
}

// value writes a figure's full value as data-value holds it: the
// shortest form that reads back as the same float64; "" where absent.
func value(v report.Number) string {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return ""
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// fig is a key figure of a number at a JSON path.
func fig(label, path string, v report.Number, say func(float64) string) figure {
	return figure{Label: label, Path: path, Value: value(v), Text: say(float64(v))}
}

// seconds writes a time to three significant figures, in µs, ms or s: a
// histogram's edge of 12.5 ms reads as 12.5 ms, never rounded to 13.
func seconds(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return units.Missing
	}
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0 s"
	case a < 1e-3:
		return sig(v*1e6) + " µs"
	case a < 1:
		return sig(v*1e3) + " ms"
	case a < 1000:
		return sig(v) + " s"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " s"
}

// sig is v to three significant figures, without trailing zeros.
func sig(v float64) string {
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// plain writes a count or a rate as the terminal does.
func plain(v float64) string { return units.Count(v) }

// percent writes a share 0..1 as a percentage.
func percent(v float64) string { return units.Percent(v) }

// clock writes a time from the run's start on an axis: "90 s".
func clock(v float64) string {
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64) + " s"
	}
	return sig(v) + " s"
}

// nan is an absent figure.
var nan = math.NaN()
