# Helper of scripts/api-fuzz, for the python of its schemathesis virtualenv.
#
# Loaded by schemathesis as its hooks module (SCHEMATHESIS_HOOKS=this file):
#
# 1. A serializer for `application/wasm`, the upload body of analyses. The document describes it as
#    bytes (an array of integers 0–255); schemathesis has no serializer of its own for the type.
#    Generated arrays go on the wire as those bytes, those of odd length behind a wasm *component*
#    preamble (`\0asm` + component version) so that the server's parser gets past the magic number
#    and chews on the rest; anything else (negative cases: strings, objects…) as its JSON text.
# 2. Known values mixed into the generated cases (by the hypothesis strategies of the fuzzing and
#    stateful phases; the coverage phase keeps to the document), so that requests get past lookups into the code behind them: run
#    ids that exist, names of uploaded analyses, time windows that hold the testbed's synthetic
#    data (2026-11-23 from 00:00Z) and parameters that the example analysis accepts. From
#    $LOUPE_FUZZ_KNOWN (JSON, set by scripts/api-fuzz): {"run_ids": [..], "analysis": "..",
#    "victim": ".."}: the example analysis, uploaded by another team (so the fuzzing team's
#    DELETE and PUT meet 403 and it stays for the invocations), and a copy owned by the fuzzing
#    team, for PUT and DELETE to act on.
# 3. A count of every HTTP request schemathesis sends and of the answers by status, with the
#    details of each 5xx answer and each request that got no answer at all (a dropped connection
#    or a timeout: a crash or a hang of the server). Kept by wrapping requests.Session.send, which
#    every schemathesis request goes through (probes, cases, the checks' extra requests, stateful
#    steps); written as JSON to $LOUPE_FUZZ_COUNTS when the process exits.
#
# Run as a script: `api-fuzz-hooks.py summary COUNTS.json OPENAPI.json [--ui-missing]` prints
# `REQUESTS SERVER_ERRORS TIMEOUTS DROPPED EXCLUDED` on its first line (5xx answers; requests
# that timed out; connections closed without an answer; 5xx answers left out because the binary
# embeds no web UI and answers 503 outside the API by design), then the answers by status and
# each distinct failure (method, route, outcome) with one example and a curl command to
# reproduce it.

import base64
import json
import os
import sys
import threading
import time
from urllib.parse import unquote, urlsplit

COMPONENT_PREAMBLE = b"\x00asm\x0d\x00\x01\x00"
MAX_KEPT = 500


def wasm_body(value):
    if value is None:
        return None
    data = getattr(value, "data", None)  # schemathesis' Binary (format: binary)
    if isinstance(data, (bytes, bytearray)):
        return bytes(data)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        raw = bytes(x & 0xFF for x in value)
        return COMPONENT_PREAMBLE + raw if len(value) % 2 else raw
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return json.dumps(value).encode()


def clip(b, n=300):
    if b is None:
        return None
    if isinstance(b, str):
        b = b.encode("utf-8", "surrogatepass")
    text = b[:n].decode("utf-8", "backslashreplace")
    return text + (f"… ({len(b)} bytes)" if len(b) > n else "")


# Time windows over the synthetic data: the whole day, run B's window (stack samples inside), the
# same as Unix ns, and an offset form.
WINDOWS = [
    ("2026-11-23T00:00:00Z", "2026-11-24T00:00:00Z"),
    ("2026-11-23T00:01:00Z", "2026-11-23T00:01:20Z"),
    ("1795392000000000000", "1795392090000000000"),
    ("-36500d", "now"),
]


def known_path_parameters(params, known):
    """Variants of generated path parameters with known values (run ids, analysis names)."""
    out = []
    if "id" in params:
        out += [{**params, "id": rid} for rid in known.get("run_ids", [])]
    if "name" in params:
        # The example analysis belongs to another team: DELETE and PUT meet 403, invocations
        # (any team may run any analysis) run it. The victim is the fuzzing team's own: PUT
        # (garbage) must leave it as it was, DELETE removes it once.
        out += [{**params, "name": n} for n in (known.get("analysis"), known.get("victim")) if n]
    return out


def known_queries(query):
    return [{**query, "from": frm, "to": to} for frm, to in WINDOWS]


def known_invoke_bodies(body):
    out = []
    for frm, to in WINDOWS[:2]:
        for params in ({}, {"threshold_bps": 1_000_000}, {"threshold_bps": 0, "min_samples": 3}, {"threshold_bps": -1}):
            out.append({**body, "from": frm, "to": to, "params": params})
    return out


def install_hooks():
    import requests
    import schemathesis
    from hypothesis import strategies as st

    schemathesis.serializer("application/wasm")(lambda ctx, value: wasm_body(value))

    known = json.loads(os.environ.get("LOUPE_FUZZ_KNOWN") or "{}")
    if known:
        # Hooks on the parts of a case, not on the whole case: a `*_case` hook takes schemathesis
        # off its fast generation path (a DELETE operation then needs ~20 s for 30 cases).
        # Generated values half of the time, a known one the other half.
        def either(value, variants):
            return st.just(value) | st.sampled_from(variants) if variants else st.just(value)

        @schemathesis.hook
        def flatmap_path_parameters(context, path_parameters):
            if context.operation is None or not isinstance(path_parameters, dict):
                return st.just(path_parameters)
            if context.operation.path.endswith("/invoke") and "name" in path_parameters and known.get("analysis"):
                return either(path_parameters, [{**path_parameters, "name": known["analysis"]}])
            return either(path_parameters, known_path_parameters(path_parameters, known))

        @schemathesis.hook
        def flatmap_query(context, query):
            names = {getattr(p, "name", None) for p in context.operation.query} if context.operation else set()
            if not ({"from", "to"} <= names) or not isinstance(query, dict):
                return st.just(query)
            return either(query, known_queries(query))

        @schemathesis.hook
        def flatmap_body(context, body):
            op = context.operation
            if op is None or op.method.upper() != "POST" or not op.path.endswith("/invoke") or not isinstance(body, dict):
                return st.just(body)
            return either(body, known_invoke_bodies(body))

    lock = threading.Lock()
    counts = {"requests": 0, "by_status": {}, "by_route": {}, "server_errors": [], "no_answer": []}
    # Every request and its answer's status, one a line, for debugging (scripts/api-fuzz writes it
    # to requests.log in its temp dir; API_FUZZ_KEEP=1 keeps it).
    trace = open(os.environ["LOUPE_FUZZ_TRACE"], "w", buffering=1) if os.environ.get("LOUPE_FUZZ_TRACE") else None
    started = time.monotonic()
    try:
        templates = list(json.load(open(os.environ["LOUPE_FUZZ_OPENAPI"])).get("paths", {}))
    except (KeyError, OSError, ValueError):
        templates = []

    def describe(request):
        body = request.body
        if hasattr(body, "read"):
            body = "<stream>"
        raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
        return {
            "method": request.method,
            "url": request.url,
            "content_type": request.headers.get("Content-Type"),
            "body": clip(body),
            "body_b64": base64.b64encode(raw).decode() if isinstance(raw, bytes) and len(raw) <= 65536 else None,
        }

    orig_send = requests.Session.send

    def send(self, request, **kwargs):
        try:
            response = orig_send(self, request, **kwargs)
        except requests.RequestException as exc:
            with lock:
                counts["requests"] += 1
                counts["by_status"]["none"] = counts["by_status"].get("none", 0) + 1
                if len(counts["no_answer"]) < MAX_KEPT:
                    counts["no_answer"].append(
                        {**describe(request), "error": f"{type(exc).__name__}: {exc}", "timeout": isinstance(exc, requests.Timeout)}
                    )
            raise
        with lock:
            counts["requests"] += 1
            key = str(response.status_code)
            counts["by_status"][key] = counts["by_status"].get(key, 0) + 1
            if trace is not None:
                trace.write(
                    f"{time.monotonic() - started:8.3f} {response.status_code} {response.elapsed.total_seconds():.3f}s"
                    f" {request.method} {request.url} {clip(request.body, 200)!r}\n"
                )
            route = f"{request.method} {route_of(unquote(urlsplit(request.url).path), templates)}"
            per_route = counts["by_route"].setdefault(route, {})
            per_route[key] = per_route.get(key, 0) + 1
            if response.status_code >= 500 and len(counts["server_errors"]) < MAX_KEPT:
                try:
                    answer = clip(response.content)
                except Exception as exc:  # a body cut short
                    answer = f"<unreadable: {exc}>"
                counts["server_errors"].append({**describe(request), "status": response.status_code, "answer": answer})
        return response

    requests.Session.send = send

    def dump():
        path = os.environ.get("LOUPE_FUZZ_COUNTS")
        if path:
            with lock, open(path, "w") as f:
                json.dump(counts, f, indent=1)

    import atexit

    atexit.register(dump)


def route_of(path, templates):
    """The document's route for a concrete path (`/api/v1/runs/7` → `/api/v1/runs/{id}`)."""
    import re

    for t in sorted(templates, key=lambda t: t.count("{")):
        if re.fullmatch(re.sub(r"\\\{[^}]*\\\}", "[^/]*", re.escape(t)), path):
            return t
    return path if path.startswith("/api/") else "(outside the API)"


def summary(counts_path, openapi_path, ui_missing):
    import shlex

    c = json.load(open(counts_path))
    try:
        templates = list(json.load(open(openapi_path)).get("paths", {}))
    except (OSError, ValueError):
        templates = []
    groups = {}
    excluded = timeouts = dropped = 0
    for kind in ("server_errors", "no_answer"):
        for e in c[kind]:
            path = unquote(urlsplit(e["url"]).path)
            if kind == "server_errors":
                # Without an embedded web UI every page outside the API answers 503 by design.
                if ui_missing and not (path.startswith("/api/") or path == "/metrics"):
                    excluded += 1
                    continue
                outcome = str(e["status"])
            elif e.get("timeout"):
                timeouts += 1
                outcome = "timeout (no answer)"
            else:
                dropped += 1
                outcome = "connection closed or refused (no answer)"
            groups.setdefault((e["method"], route_of(path, templates), outcome), []).append(e)
    five = sum(n for s, n in c["by_status"].items() if s.isdigit() and int(s) >= 500) - excluded
    print(c["requests"], five, timeouts, dropped, excluded)
    print("answers by status:", json.dumps(dict(sorted(c["by_status"].items()))))
    print("answers by route (status:count):")
    only_405 = []
    for route, statuses in sorted(c.get("by_route", {}).items(), key=lambda kv: kv[0].split(" ", 1)[::-1]):
        if set(statuses) == {"405"}:
            only_405.append(statuses["405"])
            continue
        print(f"  {route:<40} {' '.join(f'{k}:{v}' for k, v in sorted(statuses.items()))}")
    if only_405:
        print(f"  {'(methods a route does not have)':<40} 405:{sum(only_405)} on {len(only_405)} method/route pairs")
    for (method, route, outcome), es in sorted(groups.items()):
        e = es[0]
        kind = "WARNING" if outcome.startswith("connection") else "FAILURE"
        print(f"{kind} {method} {route} -> {outcome} ({len(es)}×{'+' if len(es) == MAX_KEPT else ''})")
        print(f"  example: {e['method']} {e['url']}")
        if e.get("body") is not None:
            print(f"  request body ({e.get('content_type')}): {e['body']!r}")
        if "answer" in e:
            print(f"  answer: {e['answer']!r}")
        else:
            print(f"  error: {e['error']}")
        curl = ["curl", "-sS", "-X", e["method"], "-H", '"Authorization: Bearer $TOKEN"']
        if e.get("content_type"):
            curl += ["-H", shlex.quote(f"Content-Type: {e['content_type']}")]
        prefix = ""
        if e.get("body_b64"):
            prefix = f"echo {e['body_b64']} | base64 -d | "
            curl += ["--data-binary", "@-"]
        curl.append(shlex.quote(e["url"]))
        print("  reproduce:", prefix + " ".join(curl))


if __name__ == "__main__":
    if len(sys.argv) in (4, 5) and sys.argv[1] == "summary":
        summary(sys.argv[2], sys.argv[3], ui_missing=sys.argv[4:] == ["--ui-missing"])
    else:
        sys.exit("usage: api-fuzz-hooks.py summary COUNTS.json OPENAPI.json [--ui-missing]")
else:
    install_hooks()
