// Package cli is inferscope's command line: it parses flags, drives the
// scrape → parse → analyze → render pipeline, and maps failures to the
// `inferscope: error:` / `inferscope: hint:` lines and exit codes. It never
// exits the process itself, so tests run it many times in one process.
//
// Each command (inspect, in its one-shot, --since and --watch modes, and
// demo) parses its flags into an options value and returns an error; one
// function, [exitCode], turns that error into the exit code and what
// stderr says. The flags every command shares are defined and checked in
// one place ([outputFlags], [watchFlags]), with their defaults declared
// once ([defaultOptions]).
package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"

	"github.com/inferscope/inferscope/internal/iostreams"
)

// Version is set at build time with -ldflags "-X …/internal/cli.Version=v1.2.3";
// otherwise it is the module version go install recorded, else "dev". It
// is what `inferscope version` prints and every HTTP scrape's User-Agent
// carries.
var Version = ""

func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// userAgent is the User-Agent of every HTTP scrape.
func userAgent() string { return "inferscope/" + version() }

// Main runs inferscope with args (without the program name) and returns the
// exit code. Ctrl-C (SIGINT) ends any mode at once with ExitInterrupted,
// having written nothing half-done; a second Ctrl-C kills the process.
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
	return exitCode(ctx, io.Err, command(ctx, args, io))
}

// command runs the command args name: demo, fleet, proxy, version, help, or inspect,
// which takes every other argument list.
func command(ctx context.Context, args []string, io *iostreams.IO) error {
	if len(args) > 0 {
		switch args[0] {
		case "demo":
			return runDemo(ctx, args[1:], io)
		case "fleet":
			return runFleet(ctx, args[1:], io)
		case "proxy":
			return runProxy(ctx, args[1:], io)
		case "rules":
			return runRules(ctx, args[1:], io)
		case "dashboard":
			return runDashboard(ctx, args[1:], io)
		case "version", "--version":
			fmt.Fprintln(io.Out, "inferscope", version())
			return nil
		case "help":
			fmt.Fprint(io.Out, usage)
			return nil
		}
	}
	return runInspect(ctx, args, io)
}
