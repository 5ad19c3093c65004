#!/usr/bin/env python3
"""bench/render: push a realistic stream-json file through three pipelines.

    python3 bench/render.py            # 200 MB (generated once, cached in bench/results/)
    python3 bench/render.py --mb 20    # quick run

Measured in the same run, each in a fresh process (wall time, best of --repeat; peak RSS of the
pipeline's biggest process, from getrusage(RUSAGE_CHILDREN)):
  bare pipe   cat FILE | tee /dev/null
  jq          cat FILE | tee LOG | jq --unbuffered -Rrj 'fromjson? | FILTER'
              (the file holds a few non-JSON lines, which ralph.sh's plain `jq -rj FILTER` dies
              on; the plain form is also timed on a JSON-only copy; the faster jq is the reference)
  ralph.py    cat FILE | python: os.read chunks -> log file -> StreamRenderer -> /dev/null
Targets: ralph.py >= 3x jq's throughput, peak RSS < 60 MB. jq is optional: when it is
missing the jq rows are skipped (apt-get install jq enables them). The script also checks that
ralph.py's rendering is byte-identical to the jq filter's on the same file.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
GENERATOR_VERSION = 1
CHUNK = 64 * 1024   # what one os.read of a Linux pipe returns at most by default

# docs/contract/ralph-cli.md s.12 as a jq program (the rendering of ralph.sh, with its corners
# settled).
JQ_FILTER = r'''
def f: if . == null then "" elif type == "string" then . else tojson end;
def r: if . == null then "null" elif type == "string" then . else tojson end;
def g($k): (if (.input | type) == "object" then .input[$k] else null end) | f;
if type != "object" then empty
elif .type == "assistant" then
  (if (.message | type) == "object" then .message.content else null end)
  | if type == "array" then .[] else empty end
  | if type != "object" then empty
    elif .type == "text" then (.text | f)
    elif .type == "tool_use" then
      .name as $n
      | "\n🔧 " + ($n | f) + (
        if $n == "Read" then " " + g("file_path")
        elif $n == "Write" then " " + g("file_path") + "\n" + (g("content") | .[0:500]) + "\n"
        elif $n == "Edit" then " " + g("file_path")
          + "\n   - " + (g("old_string") | .[0:200] | gsub("\n"; "\n   - "))
          + "\n   + " + (g("new_string") | .[0:200] | gsub("\n"; "\n   + ")) + "\n"
        elif $n == "Bash" then "\n   $ " + (g("command") | .[0:120])
        elif $n == "Grep" or $n == "Glob" then " " + g("pattern") + " " + g("path")
        elif $n == "Task" then " [" + g("subagent_type") + "] " + g("description")
        elif $n == "TaskCreate" then " " + g("subject")
        elif $n == "TaskUpdate" then " #" + g("taskId") + " → " + g("status")
        elif $n == "TodoWrite" then ""
        elif $n == "Skill" then " /" + g("skill")
        else " " + (.input | tojson | .[0:200]) end) + "\n"
    else empty end
elif .type == "result" then
  "\n━━ Done (" + (.subtype | r) + ") | cost: $" + (.total_cost_usd | r | .[0:6])
  + " | turns: " + (.num_turns | r) + " ━━\n"
else empty end
'''


# ---- the stream file ---------------------------------------------------------------------

def _corpus(rng: random.Random) -> str:
    words = ("self value result config path line token stream render event task agent "
             "session return import class def for in if else None True False résumé naïve "
             "日本語 ✓ → λ données").split()
    lines = []
    for i in range(40000):
        kind = rng.random()
        indent = " " * rng.choice((0, 4, 8, 12))
        body = " ".join(rng.choice(words) for _ in range(rng.randint(2, 14)))
        if kind < 0.03:
            body = f"\x1b[32mPASSED\x1b[0m tests/test_{i}.py::test_{body.split()[0]}"
        elif kind < 0.06:
            body = f'print("{body}\\n", end="")\t# "quoted" \\ backslash'
        lines.append(f"{indent}{body}")
    return "\n".join(lines)


class _Gen:
    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.corpus = _corpus(self.rng)
        self.n = 0
        self.session = "0b7c-session"

    def text(self, lo: int, hi: int) -> str:
        size = self.rng.randint(lo, hi)
        start = self.rng.randrange(0, max(1, len(self.corpus) - size))
        return self.corpus[start:start + size]

    def uid(self) -> str:
        self.n += 1
        return f"{self.n:08x}-4c1e-4b7a-9d1f-{self.rng.getrandbits(48):012x}"

    def assistant(self, block: dict) -> dict:
        return {"type": "assistant", "message": {
            "model": "claude-sonnet-4-5-20250929", "id": f"msg_{self.uid()}", "type": "message",
            "role": "assistant", "content": [block], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": self.rng.randint(1, 9), "cache_creation_input_tokens":
                      self.rng.randint(0, 4000), "cache_read_input_tokens":
                      self.rng.randint(0, 90000), "output_tokens": self.rng.randint(1, 900),
                      "service_tier": "standard"}},
            "parent_tool_use_id": None, "session_id": self.session, "uuid": self.uid()}

    def tool_use(self) -> tuple[dict, int]:
        rng, t = self.rng, self.text
        name = rng.choices(
            ["Read", "Bash", "Edit", "Write", "Grep", "Glob", "Task", "TaskCreate",
             "TaskUpdate", "TodoWrite", "Skill", "mcp__github__get_issue"],
            [25, 25, 12, 6, 8, 5, 3, 2, 3, 5, 1, 5])[0]
        path = f"/home/dev/project/src/module_{rng.randint(1, 300)}.py"
        inp: dict = {
            "Read": lambda: {"file_path": path},
            "Bash": lambda: {"command": t(10, 300), "description": t(10, 60)},
            "Edit": lambda: {"file_path": path, "old_string": t(20, 2000),
                             "new_string": t(20, 2000)},
            "Write": lambda: {"file_path": path, "content": t(500, 20000)},
            "Grep": lambda: {"pattern": "def \\w+\\(", "path": "src", "output_mode": "content"},
            "Glob": lambda: {"pattern": "**/*.py"},
            "Task": lambda: {"subagent_type": "Explore", "description": t(10, 60),
                             "prompt": t(100, 2000)},
            "TaskCreate": lambda: {"subject": t(10, 80), "description": t(50, 500)},
            "TaskUpdate": lambda: {"taskId": str(rng.randint(1, 99)), "status": "completed"},
            "TodoWrite": lambda: {"todos": [{"content": t(10, 80), "status": "pending",
                                             "activeForm": t(10, 80)} for _ in range(5)]},
            "Skill": lambda: {"skill": "ralph-build"},
        }.get(name, lambda: {"owner": "acme", "repo": "ralph", "issue_number": 3,
                             "note": t(10, 400)})()
        sizes = {"Read": (1000, 60000), "Bash": (100, 30000), "Grep": (500, 10000),
                 "Task": (1000, 5000)}
        lo, hi = sizes.get(name, (40, 400))
        if rng.random() < 0.01:
            lo, hi = 200_000, 1_000_000   # the occasional huge tool output
        return {"type": "tool_use", "id": f"toolu_{self.uid()}", "name": name, "input": inp}, \
            rng.randint(lo, hi)

    def user(self, tool_id: str, size: int) -> dict:
        out = self.text(size // 2, size // 2)
        return {"type": "user", "message": {"role": "user", "content": [
            {"tool_use_id": tool_id, "type": "tool_result", "content": out}]},
            "parent_tool_use_id": None, "session_id": self.session, "uuid": self.uid(),
            "tool_use_result": {"stdout": out, "stderr": "", "interrupted": False}}

    def session_events(self):
        rng = self.rng
        yield {"type": "system", "subtype": "init", "cwd": "/home/dev/project",
               "session_id": self.session, "tools": ["Task", "Bash", "Glob", "Grep", "Read",
               "Edit", "Write", "TodoWrite", "Skill"] * 3, "mcp_servers": [],
               "model": "claude-sonnet-4-5-20250929", "permissionMode": "default",
               "slash_commands": ["ralph-plan", "ralph-build", "compact", "review"] * 5,
               "apiKeySource": "none", "output_style": "default", "uuid": self.uid()}
        turns = rng.randint(5, 40)
        for _ in range(turns):
            if rng.random() < 0.5:
                yield self.assistant({"type": "text", "text": self.text(50, 1500)})
            block, size = self.tool_use()
            yield self.assistant(block)
            yield self.user(block["id"], size)
            if rng.random() < 0.02:
                yield {"type": "rate_limit_event", "rate_limit_info": {
                    "status": "allowed", "resetsAt": 1767000000, "rateLimitType": "five_hour"},
                    "uuid": self.uid(), "session_id": self.session}
            if rng.random() < 0.005:
                yield "[warn] agent: reconnecting to the API (non-JSON line)"
        yield self.assistant({"type": "text", "text": "All done.\n<promise>COMPLETE</promise>"})
        yield {"type": "result", "subtype": "success", "is_error": False,
               "duration_ms": rng.randint(1000, 900000), "num_turns": turns,
               "result": "All done.", "session_id": self.session,
               "total_cost_usd": rng.random() * 3, "permission_denials": [],
               "usage": {"input_tokens": 1234, "output_tokens": 5678}, "uuid": self.uid()}


def generate(path: Path, json_only: Path, megabytes: int) -> None:
    """Write the stream and a copy without its non-JSON lines (for plain jq), atomically."""
    gen, target, size = _Gen(), megabytes * 1_000_000, 0
    tmp, tmp2 = path.with_suffix(".tmp"), json_only.with_suffix(".tmp")
    with open(tmp, "wb") as fh, open(tmp2, "wb") as fh2:
        while size < target:
            for event in gen.session_events():
                if isinstance(event, str):
                    data = event.encode() + b"\n"
                else:
                    data = json.dumps(event, ensure_ascii=False,
                                      separators=(",", ":")).encode() + b"\n"
                    fh2.write(data)
                fh.write(data)
                size += len(data)
    os.replace(tmp, path)
    os.replace(tmp2, json_only)


# ---- measuring --------------------------------------------------------------------------

def _consume(log_path: str) -> None:
    """ralph.py's path: read the pipe in chunks, log every byte, render to /dev/null."""
    sys.path.insert(0, str(ROOT / "lib"))
    from ralphpy.agents.claude_render import StreamRenderer
    fd = sys.stdin.fileno()
    with open(log_path, "wb", buffering=0) as log, open(os.devnull, "wb") as out:
        renderer = StreamRenderer(out)
        while chunk := os.read(fd, CHUNK):
            log.write(chunk)
            renderer.feed(chunk)
        renderer.close()


def _measure(command: str) -> None:
    """Run in a fresh process: time one pipeline; its biggest child's peak RSS."""
    start = time.perf_counter()
    subprocess.run(["sh", "-c", command], check=True)
    wall = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps({"wall": wall, "peak_mb": peak_kib / 1024}))


def _run(command: str, repeat: int) -> dict:
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, __file__, "--_measure", command],
                             check=True, capture_output=True, text=True).stdout
        runs.append(json.loads(out))
    return {"wall": min(r["wall"] for r in runs), "peak_mb": max(r["peak_mb"] for r in runs)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=200, help="stream size in MB (default 200)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per pipeline, best kept")
    parser.add_argument("--_consume", help=argparse.SUPPRESS)
    parser.add_argument("--_measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._consume:
        _consume(args._consume)
        return 0
    if args._measure:
        _measure(args._measure)
        return 0

    RESULTS.mkdir(parents=True, exist_ok=True)
    stream = RESULTS / f"render-stream-{args.mb}mb-v{GENERATOR_VERSION}.jsonl"
    json_only = RESULTS / f"render-stream-{args.mb}mb-v{GENERATOR_VERSION}.json-only.jsonl"
    if not (stream.exists() and json_only.exists()):
        print(f"generating {stream.relative_to(ROOT)} ...", flush=True)
        generate(stream, json_only, args.mb)
    size_mb = stream.stat().st_size / 1e6
    jq = shutil.which("jq")
    q = shlex.quote
    with tempfile.TemporaryDirectory() as tmp:
        log = q(os.path.join(tmp, "session.log"))
        ours_cmd = f"cat {q(str(stream))} | {q(sys.executable)} {q(__file__)} --_consume {log}"
        rows = [("bare pipe: cat | tee", f"cat {q(str(stream))} | tee /dev/null >/dev/null")]
        if jq:
            rows.append(("jq -R 'fromjson? | FILTER'",
                         f"cat {q(str(stream))} | tee {log} | jq --unbuffered -Rrj "
                         f"{q('fromjson? | ' + JQ_FILTER)} >/dev/null"))
            rows.append(("jq plain (JSON-only copy)",
                         f"cat {q(str(json_only))} | tee {log} | jq --unbuffered -rj "
                         f"{q(JQ_FILTER)} >/dev/null"))
        rows.append(("ralph.py StreamRenderer", ours_cmd))
        results = {}
        for label, command in rows:
            results[label] = r = _run(command, args.repeat)
            print(f"{label:32} {r['wall']:7.3f} s  {size_mb / r['wall']:8.1f} MB/s  "
                  f"peak {r['peak_mb']:6.1f} MB", flush=True)
        identical = None
        if jq:   # same bytes out of both renderings on the whole file
            ours_out, jq_out = os.path.join(tmp, "ours.txt"), os.path.join(tmp, "jq.txt")
            subprocess.run(["sh", "-c", f"{sys.executable} -c {q(_RENDER_TO_FILE)} "
                            f"{q(str(ROOT / 'lib'))} < {q(str(stream))} > {q(ours_out)}"],
                           check=True)
            subprocess.run(["sh", "-c", f"jq -Rrj {q('fromjson? | ' + JQ_FILTER)} "
                            f"< {q(str(stream))} > {q(jq_out)}"], check=True)
            identical = Path(ours_out).read_bytes() == Path(jq_out).read_bytes()

    ours = results["ralph.py StreamRenderer"]
    bare = results["bare pipe: cat | tee"]
    print(f"\nstream: {size_mb:.0f} MB; ralph.py is {bare['wall'] / ours['wall']:.2f}x "
          f"the bare pipe's throughput")
    ok = ours["peak_mb"] < 60
    if jq:
        ref_label = min((k for k in results if k.startswith("jq")),
                        key=lambda k: results[k]["wall"])
        ratio = results[ref_label]["wall"] / ours["wall"]
        print(f"ralph.py vs {ref_label}: {ratio:.2f}x throughput "
              f"(target >= 3x: {'OK' if ratio >= 3 else 'MISSED'})")
        print(f"rendering identical to the jq filter's: {'yes' if identical else 'NO'}")
        ok = ok and ratio >= 3 and bool(identical)
    else:
        print("jq not found: jq reference skipped (apt-get install jq enables it)")
    print(f"peak RSS {ours['peak_mb']:.1f} MB (target < 60 MB: "
          f"{'OK' if ours['peak_mb'] < 60 else 'MISSED'})")
    return 0 if ok else 1


_RENDER_TO_FILE = """
import os, sys
sys.path.insert(0, sys.argv[1])
from ralphpy.agents.claude_render import StreamRenderer
r = StreamRenderer(sys.stdout.buffer)
while chunk := os.read(0, 65536):
    r.feed(chunk)
r.close()
"""

if __name__ == "__main__":
    sys.exit(main())
