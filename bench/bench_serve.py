"""Load test of nmtkit serve on loopback: concurrent clients, bounded in requests and time.

    bin/bench-serve CKPT SOURCE [--clients 16] [--requests 800] [--seconds 120] [--beam 5] [--serve "FLAGS"]

Starts `nmtkit serve -m CKPT` on a free port of 127.0.0.1, waits for
/health, then runs --clients threads that each POST one line of SOURCE at
a time (lines taken in turn) until --requests requests are done or
--seconds have passed. Prints requests and sentences per second, latency
p50/p90/p99, the number of errors, and the server's resident memory after
a warm-up round, at each quarter of the run, at the end and at its highest
(sampled every 0.2 s);
then stops the server with SIGTERM and reports its exit. Traffic goes to
127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .bench_common import NMTKIT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def post(url: str, body: dict[str, Any]) -> tuple[int, float]:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=120) as res:
            res.read()
            return int(res.status), time.perf_counter() - t0
    except urllib.error.HTTPError as err:
        return err.code, time.perf_counter() - t0
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, time.perf_counter() - t0


def started(args: argparse.Namespace) -> tuple[subprocess.Popen[str], str]:
    """`nmtkit serve` on a free port of 127.0.0.1, once it answers /health; its address."""
    port = free_port()
    server = subprocess.Popen(
        [*NMTKIT, "serve", "-m", args.model, "--port", str(port), *shlex.split(args.serve)],
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            with urllib.request.urlopen(url + "/health", timeout=1):
                return server, url
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.1)
    server.kill()
    sys.exit("bench-serve: the server did not start: " + server.communicate()[1][-1000:])


class Load:
    """--clients threads posting one line each until --requests are done or --seconds passed,
    the server's resident memory sampled every 0.2 s meanwhile."""

    def __init__(self, args: argparse.Namespace, url: str, lines: list[str], pid: int):
        self.args, self.url, self.lines, self.pid = args, url, lines, pid
        self.results: list[tuple[int, float]] = []
        self.counter, self.lock = 0, threading.Lock()
        self.deadline = 0.0
        self.peak: list[float] = []
        self.stop = threading.Event()

    def sample(self) -> None:
        while not self.stop.is_set():
            self.peak.append(rss_mb(self.pid))
            time.sleep(0.2)

    def client(self, _: int) -> None:
        while time.monotonic() < self.deadline:
            with self.lock:
                k = self.counter
                if k >= self.args.requests:
                    return
                self.counter += 1
            line = self.lines[k % len(self.lines)]
            self.results.append(post(self.url + "/translate", {"sentences": [line], "beam": self.args.beam}))

    def run(self, warm: float) -> float:
        """The load's wall seconds, the memory sampled from ``warm`` (after the warm-up) on."""
        self.peak = [warm]
        sampler = threading.Thread(target=self.sample, daemon=True)
        sampler.start()
        self.deadline = time.monotonic() + self.args.seconds
        t0 = time.perf_counter()
        with ThreadPoolExecutor(self.args.clients) as pool:
            list(pool.map(self.client, range(self.args.clients)))
        wall = time.perf_counter() - t0
        self.stop.set()
        sampler.join()
        return wall


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("source", type=Path)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=800)
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--serve", default="", help="more flags for nmtkit serve, quoted: --serve '--threads 2 --int8'")
    return ap


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    lines = [x for x in args.source.read_text(encoding="utf-8").splitlines() if x.strip()]
    server, url = started(args)
    for line in lines[: args.clients]:  # warm-up: first calls allocate
        post(url + "/translate", {"sentences": [line], "beam": args.beam})
    warm = rss_mb(server.pid)
    load = Load(args, url, lines, server.pid)
    wall = load.run(warm)
    end = rss_mb(server.pid)
    with urllib.request.urlopen(url + "/info", timeout=10) as res:
        served = json.loads(res.read())["served"]
    server.send_signal(signal.SIGTERM)
    code = server.wait(timeout=60)
    results, peak = load.results, load.peak
    lat = sorted(t for status, t in results if status == 200)
    errors = sum(1 for status, _ in results if status != 200)

    def pct(q: float) -> float:
        return 1000 * lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan")

    print(
        f"{len(results)} requests of one sentence from {args.clients} clients in {wall:.1f} s, beam {args.beam}: "
        f"{len(results) / wall:.1f} requests/s; {served['sentences']:,} sentences in {served['batches']:,} "
        f"batches ({served['sentences'] / max(served['batches'], 1):.1f} a batch)"
    )
    print(f"latency ms: p50 {pct(0.5):.0f}, p90 {pct(0.9):.0f}, p99 {pct(0.99):.0f}; errors {errors}")
    quarters = [peak[min(len(peak) - 1, q * len(peak) // 4)] for q in (1, 2, 3)]
    print(
        f"server RSS: {warm:.0f} MB after warm-up; {', '.join(f'{x:.0f}' for x in quarters)} MB at a quarter, "
        f"half and three quarters of the run; {end:.0f} MB at the end, {max(peak):.0f} MB at most; "
        f"SIGTERM: exit {code}"
    )
    if errors:
        sys.exit(1)
