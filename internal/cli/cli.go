// Package cli is inferscope's command line: it parses flags, drives the
// scrape → parse → analyze → render pipeline, and maps failures to the
// `inferscope: error:` / `inferscope: hint:` lines and exit codes. It never
// exits the process itself, so tests run it many times in one process.
//
// The command tree is built with cobra afresh for every run ([newRoot]):
// each command is an options value, its flags bound to the value's fields,
// and a run function that returns an error; one function, [exitCode],
// turns that error into the exit code and what stderr says, cobra's own
// errors included (a flag it cannot read reaches it through [flagError]).
// A flag that several commands take is defined once ([flagDef]), so that
// it is spelt, typed, defaulted and explained alike in each; its checks
// live beside it ([outputFlags.check], [watchFlags.check]). The help,
// docs/cli.md and the man pages are all written from the tree.
package cli

import (
	"context"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/version"
)

// Main runs inferscope with args (without the program name) and returns the
// exit code. Ctrl-C (SIGINT) ends any mode at once with ExitInterrupted,
// having written nothing half-done; a second Ctrl-C kills the process.
// SIGTERM keeps its default action: the process ends, and a shell reports
// ExitTerminated.
func Main(args []string, io *iostreams.IO) int {
	ctx, stop := interruptible()
	defer stop()
	return run(ctx, args, io)
}

// interruptible returns a context that SIGINT ends. Once it has, SIGINT is
// given back its default action, so that a second one kills the process
// whatever is still running.
func interruptible() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

// run runs the command args name and returns its exit code.
func run(ctx context.Context, args []string, io *iostreams.IO) int {
	root := newRoot(io, args)
	// Never nil: cobra reads os.Args when given nil.
	root.SetArgs(append([]string{}, args...))
	_, err := root.ExecuteContextC(ctx)
	return exitCode(ctx, io.Err, err)
}

// newRoot builds the command tree: inferscope itself (a report on a
// target) and its commands, writing to io. args are the command line's
// arguments, for what an error says of them.
func newRoot(io *iostreams.IO, args []string) *cobra.Command {
	root := newInspectCmd(io, args)
	root.AddCommand(newDemoCmd(io), newFleetCmd(io), newProxyCmd(io), newRulesCmd(io), newDashboardCmd(io),
		newDiscoverCmd(io), newVersionCmd(), newCompletionCmd())
	root.CompletionOptions.DisableDefaultCmd = true
	root.SuggestionsMinimumDistance = 2
	root.SetHelpCommand(newHelpCmd(args))
	root.InitDefaultHelpCmd()

	info := version.Current()
	root.Version = info.Version
	root.SetVersionTemplate(strings.Join(info.Lines(), "\n") + "\n")
	flagDef{name: "version", short: "v", usage: "print the version and exit (as inferscope version)"}.bool(root, new(bool))

	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	finish(root, args)
	return root
}

// userAgent is the User-Agent of every HTTP request.
func userAgent() string { return version.Current().UserAgent() }

// newVersionCmd is inferscope version.
func newVersionCmd() *cobra.Command {
	return newCommand(commandSpec{
		use:   "version",
		short: "print the version, the commit it was built from, and the toolchain",
		long: `The first line is the version every HTTP request sends as its User-Agent
(inferscope/VERSION) and every JSON report carries (inferscope_version): a
release's tag, the module version go install fetched, or, for a build from a
clone, the pseudo-version of its commit (+dirty for uncommitted changes). A
build from a clone also says its commit, the commit's time and whether the
tree had uncommitted changes.`,
		exits: []exitStatus{{ExitOK, "the version written"}},
		args:  noArgs,
		run: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write([]byte(strings.Join(version.Current().Lines(), "\n") + "\n"))
			if err != nil {
				return writeError(err)
			}
			return nil
		},
	})
}

// newHelpCmd is inferscope help [COMMAND].
func newHelpCmd(args []string) *cobra.Command {
	return newCommand(commandSpec{
		use:   "help [COMMAND]",
		short: "the help of inferscope or of a command (as COMMAND --help)",
		exits: []exitStatus{{ExitOK, "the help written"}},
		args:  cobra.ArbitraryArgs,
		run: func(cmd *cobra.Command, topic []string) error {
			target, rest, err := cmd.Root().Find(topic)
			if err != nil || target == nil || len(rest) > 0 {
				// A topic is never a host: a misspelt one gets the command
				// it may have meant, not commandTypo's hint about hosts.
				if s := suggestTopic(cmd.Root(), topic); len(s) > 0 {
					return usagef("inferscope help "+s[0]+" is its help", "no command %q; did you mean %s?", topic[0], whole(strings.Join(s, " or ")))
				}
				return usagef("inferscope --help lists the commands", "no command %q", strings.Join(topic, " "))
			}
			writeHelp(cmd.OutOrStdout(), target)
			return nil
		},
	})
}

// suggestTopic are the commands a help topic of one word may misspell.
func suggestTopic(root *cobra.Command, topic []string) []string {
	if len(topic) != 1 {
		return nil
	}
	return root.SuggestionsFor(topic[0])
}

// noArgs refuses any argument.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef(cmd.CommandPath()+" takes flags only; "+cmd.CommandPath()+" --help lists them", "unexpected argument %q", args[0])
	}
	return nil
}
