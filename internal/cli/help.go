package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpWidth is the width help text is wrapped to: the same on every
// terminal, so that the help, docs/cli.md and the man pages agree.
const helpWidth = 80

// exitStatus is one exit code a command may end with, and what it means
// for that command.
type exitStatus struct {
	code    int
	meaning string
}

// The exit statuses every command shares; each command adds what 0 means
// for it, and 1 where it takes --fail-on.
var (
	exitFailOnTripped = exitStatus{ExitFailOn, "--fail-on tripped: a note that severe fired (its id and severity on stderr)"}
	exitUsage         = exitStatus{ExitError, "a usage or input error: an inferscope: error: line and hints on stderr, nothing on stdout"}
	exitSignals       = []exitStatus{
		{ExitInterrupted, "interrupted (Ctrl-C, SIGINT): ended at once, nothing half-written"},
		{ExitTerminated, "terminated (SIGTERM), as a shell reports it"},
	}
)

// commandSpec is what a command says of itself: its usage, help, exit
// statuses, the arguments it takes and what it runs.
type commandSpec struct {
	use, short, long, example string
	exits                     []exitStatus // besides exitUsage and the signals
	// signals replace exitSignals where a command handles its signals
	// itself (the proxy drains on them).
	signals []exitStatus
	args    cobra.PositionalArgs
	run     func(cmd *cobra.Command, args []string) error
	// moved are flags this command no longer takes, with what to give
	// instead: said in the hint when one is given.
	moved map[string]string
}

// newCommand makes a command from its spec. Errors are not printed by
// cobra: they are returned to [exitCode], the one way out.
func newCommand(s commandSpec) *cobra.Command {
	exits := append(slices.Clone(s.exits), exitUsage)
	if s.signals != nil {
		exits = append(exits, s.signals...)
	} else {
		exits = append(exits, exitSignals...)
	}
	slices.SortStableFunc(exits, func(a, b exitStatus) int { return a.code - b.code })
	ann := map[string]string{"exit": encodeExits(exits)}
	for flag, instead := range s.moved {
		ann["moved:"+flag] = instead
	}
	cmd := &cobra.Command{
		Use: s.use, Short: s.short, Long: strings.TrimSpace(s.long), Example: strings.TrimRight(s.example, "\n"),
		Args: s.args, RunE: s.run, Annotations: ann,
		SilenceErrors: true, SilenceUsage: true, DisableFlagsInUseLine: true,
	}
	cmd.Flags().SortFlags = false
	return cmd
}

var flagHelp = flagDef{name: "help", short: "h", usage: "show this help"}

// finish gives every command of the tree its -h, and the tree one way to
// show help and report a flag it cannot read.
func finish(root *cobra.Command, args []string) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("help") == nil {
			flagHelp.bool(c, new(bool))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { writeHelp(c.OutOrStdout(), c) })
	root.SetUsageFunc(func(c *cobra.Command) error { writeHelp(c.OutOrStderr(), c); return nil })
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return flagError(c, err, args) })
}

// encodeExits writes exit statuses as a command's annotation, which
// decodeExits reads back.
func encodeExits(exits []exitStatus) string {
	var b strings.Builder
	for _, e := range exits {
		fmt.Fprintf(&b, "%d\t%s\n", e.code, e.meaning)
	}
	return b.String()
}

func decodeExits(c *cobra.Command) []exitStatus {
	var out []exitStatus
	for _, line := range strings.Split(strings.TrimSpace(c.Annotations["exit"]), "\n") {
		code, meaning, ok := strings.Cut(line, "\t")
		if n, err := strconv.Atoi(code); ok && err == nil {
			out = append(out, exitStatus{n, meaning})
		}
	}
	return out
}

// writeHelp writes a command's help: what it does, its usage, examples,
// subcommands, flags and exit statuses.
func writeHelp(w io.Writer, c *cobra.Command) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n\nUsage:\n  %s\n", c.CommandPath(), c.Short, c.UseLine())
	if c.Long != "" {
		fmt.Fprintf(&b, "\n%s\n", c.Long)
	}
	if c.Example != "" {
		fmt.Fprintf(&b, "\nExamples:\n%s\n", c.Example)
	}
	if subs := visible(c); len(subs) > 0 {
		b.WriteString("\nCommands:\n")
		n := 0
		for _, s := range subs {
			n = max(n, len(s.Name()))
		}
		for _, s := range subs {
			b.WriteString(wrap(fmt.Sprintf("  %-*s  ", n, s.Name()), s.Short, n+4, helpWidth))
		}
	}
	b.WriteString("\nFlags:\n")
	b.WriteString(flagTable(c.Flags()))
	b.WriteString("\nExit status:\n")
	for _, e := range decodeExits(c) {
		b.WriteString(wrap(fmt.Sprintf("  %-4d ", e.code), e.meaning, 7, helpWidth))
	}
	if subs := visible(c); len(subs) > 0 {
		fmt.Fprintf(&b, "\n%s COMMAND --help says more of each command.\n", c.CommandPath())
	}
	io.WriteString(w, b.String())
}

// visible are a command's subcommands that help lists.
func visible(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() || s.Name() == "help" {
			out = append(out, s)
		}
	}
	return out
}

// flagLine is one flag as help lists it: its spelling with the argument,
// and its usage with the default.
func flagLine(f *pflag.Flag) (string, string) {
	spelled, usage := flagParts(f)
	if d := defaultOf(f); d != "" {
		usage += " (default " + d + ")"
	}
	return spelled, usage
}

// flagParts is a flag's spelling with the argument, and its usage alone.
func flagParts(f *pflag.Flag) (string, string) {
	arg, usage := pflag.UnquoteUsage(f)
	if f.Value.Type() == "bool" {
		arg = ""
	}
	spelled := "    --" + f.Name
	if f.Shorthand != "" {
		spelled = "-" + f.Shorthand + ", --" + f.Name
	}
	if arg != "" {
		spelled += " " + arg
	}
	return spelled, usage
}

// defaultOf is a flag's default as help says it, "" when it has none worth
// saying (false, 0, empty).
func defaultOf(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "0", "false", "[]":
		return ""
	}
	return f.DefValue
}

// flagTable lists flags in two columns, their usage wrapped.
func flagTable(fs *pflag.FlagSet) string {
	const maxLeft = 28
	type row struct{ left, usage string }
	var rows []row
	left := 0
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		l, u := flagLine(f)
		rows = append(rows, row{"  " + l, u})
		if len(l)+2 <= maxLeft {
			left = max(left, len(l)+2)
		}
	})
	col := left + 2
	var b strings.Builder
	for _, r := range rows {
		head := fmt.Sprintf("%-*s", col, r.left)
		if len(r.left) > left {
			b.WriteString(r.left + "\n")
			head = strings.Repeat(" ", col)
		}
		b.WriteString(wrap(head, r.usage, col, helpWidth))
	}
	return b.String()
}

// wrap writes head and then the words of text, broken into lines of at
// most width bytes at spaces, the lines after the first indented by
// indent; each line ends in a newline.
func wrap(head, text string, indent, width int) string {
	var b strings.Builder
	line, first := head, true
	for _, w := range strings.Fields(text) {
		switch {
		case first:
			line += w
			first = false
		case len(line)+1+len(w) > width:
			b.WriteString(line + "\n")
			line = strings.Repeat(" ", indent) + w
		default:
			line += " " + w
		}
	}
	b.WriteString(strings.TrimRight(line, " ") + "\n")
	return b.String()
}

// flagError turns pflag's error for a flag it could not read into a usage
// error in inferscope's words, with a suggestion where a flag was
// misspelt.
func flagError(c *cobra.Command, err error, args []string) error {
	help := c.CommandPath() + " --help lists the flags"
	var (
		ne *pflag.NotExistError
		ve *pflag.ValueRequiredError
		ie *pflag.InvalidValueError
	)
	switch {
	case errors.As(err, &ne):
		return unknownFlag(c, ne, help, args)
	case errors.As(err, &ve):
		return usagef(help, "flag needs an argument: --%s", ve.GetFlag().Name)
	case errors.As(err, &ie):
		f := ie.GetFlag()
		if f.Value.Type() == "bool" {
			return usagef(help, "--%s takes no value (or --%s=true, --%s=false), not %q", f.Name, f.Name, f.Name, ie.GetValue())
		}
		return usagef(help, "invalid value %q for --%s: %v", ie.GetValue(), f.Name, ie.Unwrap())
	}
	return usagef(help, "%v", err)
}

// unknownFlag is a flag the command does not take: said as typed, with the
// flags it may have meant.
func unknownFlag(c *cobra.Command, ne *pflag.NotExistError, help string, args []string) error {
	name, group := ne.GetSpecifiedName(), ne.GetSpecifiedShortnames()
	if err := commandTypo(c, args); err != nil {
		return err
	}
	var hints []string
	spelled := "--" + name
	switch {
	case group != "":
		spelled = "-" + name
		long := singleDash(c, args, group)
		if long != "" {
			// -json: pflag read -j (-hist: -h, then -i), but what was
			// typed, and meant, is said first.
			return usagef(help, "unknown flag -%s: a long flag takes two dashes, --%s", long, long)
		}
		if name == "v" && c.HasParent() {
			hints = append(hints, "inferscope --version prints the version")
		}
	case c.Annotations["moved:"+name] != "":
		hints = append(hints, c.Annotations["moved:"+name])
	default:
		for _, s := range suggestFlags(c.Flags(), name) {
			hints = append(hints, "did you mean --"+s+"?")
		}
	}
	return &usageError{msg: fmt.Sprintf("unknown flag %s", echoed(spelled)), hints: append(hints, help)}
}

// singleDash is the long flag of c that an argument wrote with one dash
// (-json), where pflag failed on its shorthands from rest on; "" if none.
func singleDash(c *cobra.Command, args []string, rest string) string {
	for _, a := range args {
		if a == "--" {
			break
		}
		w, ok := strings.CutPrefix(a, "-")
		w, _, _ = strings.Cut(w, "=")
		if ok && len(w) > 1 && strings.HasSuffix(w, rest) && c.Flags().Lookup(w) != nil {
			return w
		}
	}
	return ""
}

// suggestFlags are the flags of fs that name may be a misspelling of:
// within two edits, or one a prefix of the other.
func suggestFlags(fs *pflag.FlagSet, name string) []string {
	var out []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		prefix := len(name) >= 3 && (strings.HasPrefix(f.Name, name) || strings.HasPrefix(name, f.Name))
		if prefix || distance(name, f.Name) <= 2 {
			out = append(out, f.Name)
		}
	})
	return out
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// commandTypo refuses a first argument of inferscope itself that reads as
// a misspelt command rather than a target: no file of that name, nothing
// that makes it a host (a port, a dot) or a path, and a command close to
// it. args are the command line's arguments.
func commandTypo(c *cobra.Command, args []string) error {
	if c.HasParent() {
		return nil
	}
	if len(args) == 0 || strings.ContainsAny(args[0], ".:/\\-~") {
		return nil
	}
	word := args[0]
	if _, err := os.Stat(word); err == nil {
		return nil
	}
	suggestions := c.SuggestionsFor(word)
	if len(suggestions) == 0 {
		return nil
	}
	return usagef("to scrape a host of that name, give its port or a URL: "+word+":5000",
		"unknown command %q; did you mean inferscope %s?", word, strings.Join(suggestions, " or inferscope "))
}
