// Package spark draws a series of figures as a sparkline: one cell per
// value, oldest first, each cell one of eight heights of the block eighths
// (▁▂▃▄▅▆▇█), and a blank where a value is missing. Every trend inferscope
// draws (the watch view's rates and gauges, the fleet table's instances)
// goes through [Draw], so a height means the same wherever it is seen.
//
// # Scale
//
// Each series is scaled on its own ([Line.Lo] to [Line.Hi]), and the scale
// is said beside it ([Line.Range]): heights compare within a line, never
// across lines. On a [FromZero] axis (rates, shares, counts) the scale
// starts at 0, so a height is proportional to its value; on a [FromFloor]
// axis (a latency) it starts at the lowest value shown, and Range states
// that floor. The lowest height is the scale's bottom only: a value above
// it is drawn at least one eighth higher, so that nothing above zero reads
// as zero.
//
// # Gaps
//
// A missing value (NaN or ±Inf: a failed scrape, a restart, an interval
// with nothing to divide) is a gap, drawn blank; it is never drawn as the
// bottom of the scale, and it does not take part in the scale.
//
// # Glyphs
//
// [Blocks] are the block eighths; [ASCII] is for terminals whose locale is
// not UTF-8 ([LocaleGlyphs]) or a user who asks for it: eight characters of
// increasing weight. A heat cell ([Shade]) is one of four shades (░▒▓█, or
// .:*# in ASCII) and blank for nothing.
//
// The package is inferscope's own: none of the Go modules at hand draws
// sparklines for Charm's v2 stack (Bubble Tea v2), and a sparkline is a
// scale and a table of eight characters.
package spark

import (
	"math"
	"strings"
)

// Levels is the number of heights a cell takes: 1 (the bottom of the
// scale) to Levels (its top). A gap has level 0.
const Levels = 8

// Axis is where a line's scale starts.
type Axis uint8

const (
	// FromZero scales from 0 (or from the lowest value, where one is below
	// 0) to the highest value: heights proportional to the values. For
	// rates, shares and counts.
	FromZero Axis = iota
	// FromFloor scales from the lowest value shown to the highest: the
	// shape of a figure that never nears 0 (a latency), its floor stated
	// by [Line.Range].
	FromFloor
)

// Glyphs is the set of characters a line is drawn with.
type Glyphs uint8

const (
	// Blocks are the Unicode block eighths ▁▂▃▄▅▆▇█.
	Blocks Glyphs = iota
	// ASCII is eight characters of increasing weight, _.-~=+*#, for a
	// terminal that cannot show the blocks.
	ASCII
)

// Gap is the glyph of a missing value in either set.
const Gap = " "

var (
	blocks = [Levels]string{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"}
	ascii  = [Levels]string{"_", ".", "-", "~", "=", "+", "*", "#"}
)

// Options say how a series is drawn.
type Options struct {
	Axis   Axis
	Glyphs Glyphs
	// Width is the most cells drawn: a longer series keeps its newest
	// Width values (the scale is theirs). 0 or less draws every value.
	Width int
}

// Cell is one value of a line.
type Cell struct {
	// Value is the value drawn; NaN for a gap.
	Value float64
	// Level is its height, 1 to [Levels]; 0 for a gap.
	Level int
	// Index is the value's index in the series given to [Draw].
	Index int
}

// Gap reports whether the cell is a missing value.
func (c Cell) Gap() bool { return c.Level == 0 }

// Line is a series drawn: its cells, oldest first, and the scale they are
// drawn on.
type Line struct {
	Cells []Cell
	// Lo and Hi are the scale: level 1 is Lo, level Levels is Hi. Both are
	// NaN when every value is a gap; they are equal when every value is.
	Lo, Hi float64
	Axis   Axis
	Glyphs Glyphs
}

// Draw scales values (NaN or ±Inf for a missing one) and gives each its
// height. A value equal to Lo is level 1; any value above Lo is at least
// level 2; Hi is level [Levels]; between, the height is rounded in
// proportion to the value. Where Lo equals Hi every value is level 1 (a
// flat line, all zeros on a FromZero axis) unless the axis is FromZero and
// the values are above 0, which are then all at the top.
func Draw(values []float64, o Options) Line {
	first := 0
	if o.Width > 0 && len(values) > o.Width {
		first = len(values) - o.Width
	}
	shown := values[first:]
	l := Line{Lo: math.NaN(), Hi: math.NaN(), Axis: o.Axis, Glyphs: o.Glyphs, Cells: make([]Cell, len(shown))}
	for _, v := range shown {
		if missing(v) {
			continue
		}
		if math.IsNaN(l.Lo) {
			l.Lo, l.Hi = v, v
		}
		l.Lo, l.Hi = math.Min(l.Lo, v), math.Max(l.Hi, v)
	}
	if o.Axis == FromZero && l.Lo > 0 {
		l.Lo = 0
	}
	for i, v := range shown {
		c := Cell{Value: v, Index: first + i}
		if missing(v) {
			c.Value = math.NaN()
		} else {
			c.Level = level(v, l.Lo, l.Hi)
		}
		l.Cells[i] = c
	}
	return l
}

// level is v's height on the scale lo..hi.
func level(v, lo, hi float64) int {
	if v <= lo {
		return 1
	}
	if v >= hi {
		return Levels
	}
	n := 1 + int(math.Round(float64(Levels-1)*(v-lo)/(hi-lo)))
	return min(max(n, 2), Levels)
}

func missing(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

// Glyph is the character of a cell of this line.
func (l Line) Glyph(c Cell) string { return l.Glyphs.Level(c.Level) }

// Level is the character of a height: [Gap] for 0, the bottom for 1 and
// the top for [Levels] (clamped between).
func (g Glyphs) Level(n int) string {
	if g == ASCII {
		return pick(ascii[:], n)
	}
	return pick(blocks[:], n)
}

// pick is set's n-th glyph counting from 1, clamped to the last; [Gap]
// for 0.
func pick(set []string, n int) string {
	if n <= 0 {
		return Gap
	}
	return set[min(n, len(set))-1]
}

// String draws the line, one cell per value.
func (l Line) String() string {
	var b strings.Builder
	for _, c := range l.Cells {
		b.WriteString(l.Glyph(c))
	}
	return b.String()
}

// Range says the line's scale with format writing each end: "0–14.1K" on
// a FromZero axis, "70 ms–4.85 s" from a floor, the one value where every
// value is the same on a FromFloor axis, and "" when there is no value.
func (l Line) Range(format func(float64) string) string {
	if math.IsNaN(l.Lo) {
		return ""
	}
	if l.Lo == l.Hi && l.Axis == FromFloor {
		return format(l.Lo)
	}
	return format(l.Lo) + "–" + format(l.Hi)
}

// Scale says the line's scale as every trend in inferscope states it:
// like [Line.Range], but a zero end is written "0" whatever format does
// with it ("0–62.0%", not "0.0%–62.0%"), and a flat line on either axis is
// its one value. "" when there is no value.
func (l Line) Scale(format func(float64) string) string {
	if math.IsNaN(l.Lo) {
		return ""
	}
	lo := format(l.Lo)
	if l.Lo == 0 {
		lo = "0"
	}
	if l.Lo == l.Hi {
		return lo
	}
	return lo + "–" + format(l.Hi)
}

// Run is a stretch of consecutive cells of one class, as text.
type Run[C comparable] struct {
	Text  string
	Class C
}

// Runs groups the cells of l by class (a colour, say), in order: what a
// renderer styles span by span.
func Runs[C comparable](l Line, class func(Cell) C) []Run[C] {
	var out []Run[C]
	for _, c := range l.Cells {
		k, g := class(c), l.Glyph(c)
		if n := len(out); n > 0 && out[n-1].Class == k {
			out[n-1].Text += g
			continue
		}
		out = append(out, Run[C]{Text: g, Class: k})
	}
	return out
}

// Shades is the number of shades of a heat cell besides blank.
const Shades = 4

var (
	shadeBlocks = [Shades]string{"░", "▒", "▓", "█"}
	shadeASCII  = [Shades]string{".", ":", "*", "#"}
)

// ShadeLevel is the shade of a share 0..1 of a whole: 0 for nothing (or a
// missing share), else 1 to [Shades], each a quarter of the range, any
// share above 0 at least 1.
func ShadeLevel(share float64) int {
	if missing(share) || share <= 0 {
		return 0
	}
	return min(max(int(math.Ceil(share*Shades)), 1), Shades)
}

// Shade is the character of a shade level: [Gap] for 0.
func (g Glyphs) Shade(n int) string {
	if g == ASCII {
		return pick(shadeASCII[:], n)
	}
	return pick(shadeBlocks[:], n)
}

// LocaleGlyphs is the glyph set the locale in the environment allows:
// [ASCII] where the first of LC_ALL, LC_CTYPE and LANG that is set names
// a character set other than UTF-8 ("C", "POSIX", "en_US.ISO-8859-1"),
// else [Blocks]. Where none is set the rest of the output's characters
// (·, …, ≤, the bars) are already taken to show, and so are the blocks.
func LocaleGlyphs(getenv func(string) string) Glyphs {
	for _, k := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		v := getenv(k)
		if v == "" {
			continue
		}
		if utf8Charset(v) {
			return Blocks
		}
		return ASCII
	}
	return Blocks
}

// utf8Charset reports whether a locale name's character set is UTF-8
// (language_TERRITORY.charset@modifier; C.UTF-8 too).
func utf8Charset(locale string) bool {
	_, cs, ok := strings.Cut(locale, ".")
	if !ok {
		return false
	}
	cs, _, _ = strings.Cut(cs, "@")
	cs = strings.ToLower(strings.ReplaceAll(cs, "-", ""))
	return cs == "utf8"
}
