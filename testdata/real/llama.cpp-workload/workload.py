#!/usr/bin/env python3
# The known workload of issue 28's llama.cpp fixtures (README.md here), run as
#   python3 workload.py http://127.0.0.1:18090 ANSWERS.jsonl
# against a fresh llama-server -m tiny-llama.gguf --metrics -np 2 -c 2048.
# Six /completion requests whose prompts are token-id arrays (used as given:
# no BOS added), pinned to a slot with id_slot, each generating exactly
# n_predict tokens (ignore_eos). P is a 96-token shared prefix; each suffix
# is 32 tokens, so a prompt is 128. It prints the answers' timings added up.
import json, sys, threading, urllib.request

base = sys.argv[1]            # e.g. http://127.0.0.1:18090
out = sys.argv[2]             # where each request's answer (timings) is written
P = [200 + i for i in range(96)]
def suffix(k): return [300 + (7 * k + i) % 32 for i in range(32)]  # distinct per k in its first token
def req(name, slot, k):
    body = {"prompt": P + suffix(k), "n_predict": 16, "ignore_eos": True, "id_slot": slot,
            "cache_prompt": True, "temperature": 0, "stream": False}
    r = urllib.request.Request(base + "/completion", data=json.dumps(body).encode(),
                               headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(r, timeout=120) as resp:
        a = json.load(resp)
    return name, slot, a["tokens_predicted"], a["tokens_evaluated"], a["timings"]

results = []
for name, slot, k in [("A", 0, 0), ("B", 0, 1), ("C", 0, 1), ("D", 1, 2)]:
    results.append(req(name, slot, k))
# E and F at once, one per slot, so their prompts share decode batches.
th = []
def run(name, slot, k): results.append(req(name, slot, k))
for name, slot, k in [("E", 0, 3), ("F", 1, 4)]:
    t = threading.Thread(target=run, args=(name, slot, k)); t.start(); th.append(t)
for t in th: t.join()
with open(out, "w") as f:
    for r in results:
        f.write(json.dumps({"req": r[0], "id_slot": r[1], "tokens_predicted": r[2], "tokens_evaluated": r[3], "timings": r[4]}) + "\n")
tot = lambda key: sum(r[4][key] for r in results)
print("cache_n", tot("cache_n"), "prompt_n", tot("prompt_n"), "predicted_n", tot("predicted_n"),
      "prompt_ms", round(tot("prompt_ms"), 3), "predicted_ms", round(tot("predicted_ms"), 3))
