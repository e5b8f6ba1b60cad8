// Package doctest holds the tests that keep the README and docs/ true: the
// examples they show are run, so that none can go stale.
//
// A fenced block marked console is a terminal session: each line that
// starts with "$ " is a command (a line ending in a backslash goes on to
// the next), and the lines up to the next command are what it printed,
// stdout and stderr together. The test runs every such block in bash, in a
// fresh folder that holds the repository's examples/ and testdata/, with
// the inferscope built from this tree first on PATH, and compares what each
// command prints with what the page shows. A command ending in & runs in
// the background, and the next one starts once every loopback address it
// names answers (half a second later where it names none), so that what it
// prints as it starts is shown with it; every background job is stopped
// when the block ends, and the block's folder (its TMPDIR too) removed. The
// loopback ports a block names are replaced by free ones while it runs and
// written back in what it printed, so blocks neither collide with each
// other nor with anything listening on the machine.
//
// Both sides are normalised before they are compared: times of day and
// dates read TIME, the build's version VERSION (devel too, where the build
// recorded none), a 40-hex commit COMMIT, the Go release and the platform
// a binary was built with GO and PLATFORM. A line that is only "…" stands
// for any number of lines, and a line that ends in " …" for any line that
// starts as it does. An HTML comment on the line before a block changes
// how it is read:
//
//	<!-- doctest: numbers -->   every number, bar and trend is masked (timings a run cannot repeat)
//	<!-- doctest: skip REASON --> not run (the reason is required)
//
// A block that runs curl, jq, prometheus, promtool, vmalert or
// victoria-metrics where that program is not on PATH is skipped, and fails
// instead under INFERSCOPE_CI=1 (.ci/run installs them). A block of any
// other kind that shows a "$ " command is an error: output shown outside a
// console block is never checked.
//
// A block marked sh shows commands without their output: each line that
// starts with "inferscope " is checked with cli.Check (the command exists
// and takes those flags), so a flag that is renamed or removed fails the
// test of every page that still shows it.
//
// Every relative link of the README, CHANGELOG.md and docs/ must name a
// file that exists and, with a #fragment, a heading of that page as GitHub
// writes its id.
//
// go test ./internal/doctest -update writes what the commands print now
// into the pages; read the diff.
package doctest
