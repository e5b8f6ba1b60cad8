package fleet

// Each instance's path: read from the store's sums, or whole. Decided
// here alone, once the window and the store's sums are in, for every
// instance with a sample in the window, each read whole with its reason:
//
//   - asked: --instance, --read-whole and --model read every instance whole
//     (Options.Read), for reports with every figure (no reason given);
//   - the window's two ends cannot give its window: gone (no sample at
//     its end), down, born inside it (window.born: first seen, its targets
//     not scraped before it), restarted inside it;
//   - its series repeat under a replica label (the sums would add the
//     copies);
//   - its shape has no library (native histograms, its models named by a
//     label the sums do not keep, names chosen by their values, series
//     that make nothing the dialect reads: shape.why);
//   - its sums cannot stand for it (readingsOf: none at the window's end,
//     other quantities than its shape's first instance's, a value that
//     cannot be, buckets or counters that fall).
//
// The fleet note fleet_read_whole names each instance a pushdown read
// whole, and why.

// path is how one instance is read: in a pushdown, an instance is read
// whole (why) where the store's sums cannot give its window.
type path struct {
	read Read
	why  string
}

// choosePaths decides the path of every instance of the window: unread
// are, by id, why the store's sums of an instance cannot stand for it.
func choosePaths(o Options, d *discovery, w *window, unread map[string]string) map[string]path {
	out := make(map[string]path, len(w.groups))
	for _, g := range w.groups {
		out[g.id] = pathOf(o, g, d.shapeOf[g.id], w, unread[g.id])
	}
	return out
}

// pathOf is one instance's path.
func pathOf(o Options, g *group, sh *shape, w *window, unread string) path {
	if o.Read == Rebuild {
		return path{read: Rebuild}
	}
	why := ""
	switch {
	case w.end[g.id] == 0:
		why = "gone: no sample at the window's end"
	case w.down(g):
		why = "down"
	case w.born(g):
		why = "first seen inside the window"
	case w.restarted[g.id]:
		why = "restarted inside the window"
	case g.replicated() != "":
		why = g.replicated()
	case sh == nil || sh.lib == nil:
		why = shapeWhy(sh)
	case unread != "":
		why = unread
	default:
		return path{read: Pushdown}
	}
	return path{read: Rebuild, why: why}
}

// shapeWhy is why a shape has no library.
func shapeWhy(sh *shape) string {
	if sh == nil || sh.why == "" {
		return "no library of its shape"
	}
	return sh.why
}

// wholly lists the instances of the window whose path is to be read
// whole, in order.
func wholly(w *window, paths map[string]path) []*group {
	var out []*group
	for _, g := range w.groups {
		if paths[g.id].read == Rebuild {
			out = append(out, g)
		}
	}
	return out
}
