#!/usr/bin/env python3
"""Drive tabbyAPI's reference metric set (common/metrics.py of PR #443) with
the cases of cases.json, for the exporter's cross-check.

This file is ours: it imports the reference module from the path given and
stands in for the tabbyAPI objects it reads live state from (the model
container, the generator, its page table, KV offload cache and recurrent
checkpoint cache). It copies nothing from the reference.

    driver.py render METRICS_PY CASES_JSON          every case's exposition
    driver.py bench METRICS_PY CASES_JSON CASE N    time N renders of one case

render prints "# CASE <name>" before each case's exposition. bench prints
nanoseconds per render, bytes and lines of one exposition.
"""

import importlib.util
import json
import sys
import time
import types


class Sized:
    """An object with a length and attributes, like the backend's caches."""

    def __init__(self, n, **attrs):
        self._n = n
        self.__dict__.update(attrs)

    def __len__(self):
        return self._n


def container_for(live):
    """The model container the reference reads live state from, or None when
    no model is loaded. Field names follow the Go exporter's Live struct."""
    if live is None:
        return None
    page, pages = live.get("PageSize", 0), live.get("KVPages", 0)
    pagetable = types.SimpleNamespace(
        max_pages=pages,
        referenced_pages=range(live.get("KVReferencedPages", 0)),
        metrics={
            "alloc_kv_only_pages": live.get("KVOnlyPages", 0),
            "stashes_stranded": live.get("StrandedByKV", 0),
        },
    )
    gen = types.SimpleNamespace(
        num_active_jobs=lambda: live.get("ActiveJobs", 0),
        num_pending_jobs=lambda: live.get("PendingJobs", 0),
        pagetable=pagetable,
        # The Go exporter is given the page size; the reference derives it
        # as max_total_tokens // max_pages, so the cases keep both whole.
        max_total_tokens=pages * page,
        cpu_page_cache=None,
        recurrent_cache=None,
    )
    off = live.get("Offload")
    if off is not None:
        gen.cpu_page_cache = Sized(
            off.get("Slots", 0),
            max_slots=off.get("MaxSlots", 0),
            slot_size=off.get("SlotBytes", 0),
            metrics={
                "restores": off.get("Restores", 0),
                "pushes": off.get("Stores", 0),
                "dedup_hits": off.get("DedupedStores", 0),
                "evictions": off.get("Evictions", 0),
                "cold_allocs": off.get("ColdAllocs", 0),
            },
        )
    rec = live.get("Recurrent")
    if rec is not None:
        gen.recurrent_cache = Sized(
            rec.get("Checkpoints", 0),
            current_size=rec.get("Bytes", 0),
            max_size=rec.get("MaxBytes", 0),
            metrics={
                "stash_evictions": rec.get("Evictions", 0),
                "stash_evictions_stranded": rec.get("StrandedEvictions", 0),
                "stash_evictions_live_kv": rec.get("LiveKVEvictions", 0),
                "stash_pruned": rec.get("Pruned", 0),
            },
        )
    return types.SimpleNamespace(generator=types.SimpleNamespace(generator=gen))


def load_reference(path):
    # The reference imports common.model lazily to read live state; this
    # stand-in module is what it finds.
    common = types.ModuleType("common")
    model = types.ModuleType("common.model")
    model.container = None
    common.model = model
    sys.modules["common"] = common
    sys.modules["common.model"] = model
    spec = importlib.util.spec_from_file_location("tabbyapi_metrics", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, model


def prepare(mod, model, case):
    """A fresh metrics manager with the case's steps applied."""
    mm = mod.MetricsManagerClass()
    mm.process_start_time = case["start"]
    for step in case.get("steps", []):
        if "configure" in step:
            mm.configure_token_buckets(step["configure"])
            continue
        g = step["record"]
        draft = g.get("draft")
        for _ in range(g.get("repeat", 1)):
            mm.record_generation(
                g.get("prompt", 0),
                g.get("cached", 0),
                g.get("generated", 0),
                g.get("prefill", 0.0),
                g.get("decode", 0.0),
                queue_time=g.get("queue", 0.0),
                accepted_draft_tokens=None if draft is None else draft.get("Accepted", 0),
                rejected_draft_tokens=None if draft is None else draft.get("Rejected", 0),
            )
    model.container = container_for(case.get("live"))
    return mm


def main(argv):
    if len(argv) < 4 or argv[1] not in ("render", "bench"):
        sys.exit(__doc__)
    mod, model = load_reference(argv[2])
    with open(argv[3]) as f:
        cases = json.load(f)["cases"]
    if argv[1] == "render":
        out = []
        for case in cases:
            mm = prepare(mod, model, case)
            out.append(f"# CASE {case['name']}\n")
            out.append(mm.render_prometheus())
        sys.stdout.write("".join(out))
        return
    case = next(c for c in cases if c["name"] == argv[4])
    n = int(argv[5])
    mm = prepare(mod, model, case)
    text = mm.render_prometheus()
    start = time.perf_counter_ns()
    for _ in range(n):
        mm.render_prometheus()
    elapsed = time.perf_counter_ns() - start
    print(elapsed / n, len(text), text.count("\n"))


if __name__ == "__main__":
    main(sys.argv)
