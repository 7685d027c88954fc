"""Each toolkit at its best in the same budget: ``bin/bench-sweep`` (``make bench-sweep``).

    bin/bench-sweep [--toolkits nmtkit,marian,fairseq,joeynmt,opennmt] [--updates 200] [--minutes 20]

For nmtkit and its peers, on the demo's units and data (bin/bench-marian's work directory, whose
text and vocabularies every toolkit reads):

1. sweep: each toolkit's own documented recipe for an RNN with attention (:mod:`.peer_recipes`),
   at the demo's model size and trained synchronously, run at several learning rates (and
   schedules, where the toolkit has them; and a rate further, up to twice, while the best rate is
   the grid's highest or lowest) for ``--updates`` updates each, the same for all: the
   same verses, whatever the toolkit's speed, so that a point's figure does not depend on what
   else ran on the machine. Each point's figure is its dev cross-entropy at its last update, in
   nats per target unit (</s> included), read from the toolkit's own validation;
2. picks: the point of each toolkit with the lowest dev cross-entropy, trained for ``--minutes``
   of wall time alone on the cores (its updates, target tokens/s, peak RSS), and the test BLEU at
   beam 5 of its model at the end of the budget and of its best validated one (by dev loss, as the
   toolkit keeps it), scored as bin/bench-marian scores;
3. decoding at comparable BLEU, as bin/bench-marian decodes: Marian's and fairseq's picks each
   beside nmtkit's kept checkpoint (of its pick's run) nearest its BLEU, then nmtkit's pick, at
   ``--beams`` on ``--threads`` threads and on one;
4. a table on stdout and in $BENCH_DIR/marian-demo/sweep.json; after the decoding, the picks'
   figures in results/bench-sweep.json (:mod:`.results`), which README.md's results table quotes.

Every point, pick and decoding is kept: a rerun goes on where the last call stopped;
``--stage sweep`` stops after the sweep, ``--stage picks`` after the picks. A toolkit whose venv
is missing is left out with one line on stderr (bench/peers/install.sh installs each).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from nmtkit.core.machine import describe, machine

from .bench_common import CHECKOUT, Site, bench_dir, fail, json_of, write_text
from .bench_marian import bleu5, comparable_nmtkit, decode_table, decoding, fastest_path, train_nmtkit
from .peer_fairseq import fairseq_pace, fairseq_sweep_point, train_fairseq
from .peer_joeynmt import joey_venv, joeynmt_sweep_point, train_joeynmt
from .peer_marian import marian_sweep_point, prepare, train_marian
from .peer_opennmt import onmt_bin, opennmt_sweep_point, train_opennmt
from .peer_recipes import RECIPES, Point, Recipe, nmtkit_sweep_point, parts
from .results import record

PROG = "bench-sweep"
EXTEND = 2  # rates added past the grid's end, at most, while the best is at that end


def installed(site: Site, toolkit: str) -> bool:
    """Whether ``toolkit`` can run here (nmtkit always can)."""
    return {
        "nmtkit": True,
        "marian": site.marian_py.exists(),
        "fairseq": (site.fairseq_bin / "fairseq-train").exists(),
        "joeynmt": (joey_venv(site) / "bin" / "python").exists(),
        "opennmt": (onmt_bin(site) / "onmt_train").exists(),
    }[toolkit]


SWEEP = {
    "nmtkit": nmtkit_sweep_point,
    "marian": marian_sweep_point,
    "fairseq": fairseq_sweep_point,
    "joeynmt": joeynmt_sweep_point,
    "opennmt": opennmt_sweep_point,
}


def sweep_point(site: Site, point: Point, updates: int, threads: int) -> dict[str, Any]:
    """One point of the sweep (kept: a rerun reads it back; one cut short is run again whole)."""
    out = site.work / "sweep" / f"{point.toolkit}-{point.name}.json"
    if out.exists():
        kept: dict[str, Any] = json_of(out)
        if kept["updates_asked"] == updates:
            return kept
        fail(PROG, f"{out}: made with --updates {kept['updates_asked']}, not {updates}; remove it to start over")
    run_dir = site.work / "sweep" / f"{point.toolkit}-{point.name}"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    print(f"{PROG}: {point.toolkit} {point.name}: {updates} updates", file=sys.stderr, flush=True)
    found = SWEEP[point.toolkit](site, point, run_dir, updates, threads)
    row = {"toolkit": point.toolkit, "point": point.name, "settings": " ".join(point.flags), **found}
    row["updates_asked"] = updates
    write_text(out, json.dumps(row, indent=1))
    return row


def sweep_toolkit(site: Site, recipe: Recipe, updates: int, threads: int) -> list[dict[str, Any]]:
    """A toolkit's sweep: its points, then a rate further while the best is at the grid's end."""
    rows = [sweep_point(site, p, updates, threads) for p in recipe.points]
    for _ in range(EXTEND):
        further = recipe.beyond(best_point(rows)["point"], [r["point"] for r in rows])
        if further is None:
            break
        rows.append(sweep_point(site, further, updates, threads))
    return rows


def best_point(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The row of the lowest dev cross-entropy (a run that diverged has none and is never picked)."""
    scored = [r for r in rows if r.get("dev_ce") is not None]
    if not scored:
        fail(PROG, f"no point of {rows[0]['toolkit']} reached a dev cross-entropy")
    return min(scored, key=lambda r: r["dev_ce"])


# each pick's best validated model (by dev loss), relative to the work directory
PICK_MODEL = {
    "nmtkit": "pick-nmtkit/best.pt",
    "marian": "pick-marian",
    "fairseq": "pick-fairseq/checkpoint_best.pt",
    "joeynmt": "pick-joeynmt/model/best.ckpt",
}
# and its model at the end of the budget: each toolkit saves one as it stops (OpenNMT-py, which
# does not, names both in its run)
LAST_MODEL = {
    "nmtkit": "pick-nmtkit/last.pt",
    "marian": "pick-marian/model.npz",
    "fairseq": "pick-fairseq/checkpoint_last.pt",
    "joeynmt": "pick-joeynmt/model/latest.ckpt",
}


def pick_models(toolkit: str, run: dict[str, Any]) -> dict[str, str]:
    """A pick's last model and its best validated one."""
    if toolkit == "opennmt":
        return {"last": run["last_model"], "best": run["best_model"]}
    return {"last": LAST_MODEL[toolkit], "best": PICK_MODEL[toolkit]}


def pick_run(site: Site, point: Point, minutes: float, threads: int) -> dict[str, Any]:
    """The picked point trained for ``minutes`` alone on the cores, and the test BLEU at beam 5 of
    its last model and of its best validated one."""
    name, flags = f"pick-{point.toolkit}", list(point.flags)
    if point.toolkit == "nmtkit":
        run = train_nmtkit(site, minutes, threads, name=name, extra=flags)
    elif point.toolkit == "marian":
        run = train_marian(site, minutes, threads, name, settings=flags)
    elif point.toolkit == "fairseq":
        if "cosine" in flags:  # its cosine ends at --max-update: the updates its pace here gives in the budget
            flags += ["--max-update", str(int(fairseq_pace(site, point, threads) * minutes * 60))]
        run = train_fairseq(site, minutes, threads, name, settings=flags)
    elif point.toolkit == "opennmt":
        run = train_opennmt(site, minutes, threads, name, point)
    else:
        run = train_joeynmt(site, minutes, threads, name, point)
    models = pick_models(point.toolkit, run)
    if not (site.work / models["best"]).exists():  # no validation in its budget: its last is its best
        models["best"] = models["last"]
    bleu = {kind: bleu5(site, point.toolkit, model, threads) for kind, model in models.items()}
    return {**run, "point": point.name, "bleu": bleu["best"], "bleu_last": bleu["last"], "models": models}


def better(pick: dict[str, Any]) -> tuple[str, float]:
    """A pick's model of the higher test BLEU, its last or its best validated, and that BLEU."""
    kind = "last" if pick["bleu_last"] > pick["bleu"] else "best"
    return pick["models"][kind], max(pick["bleu_last"], pick["bleu"])


TIMED_PEERS = ("marian", "fairseq", "opennmt")  # Joey NMT's translate times its loading with its search


def beside(site: Site, threads: int, picks: dict[str, Any]) -> dict[str, str]:
    """Each timed peer's pick → nmtkit's kept checkpoint of its own pick's run nearest the BLEU of
    the peer's better model."""
    if "nmtkit" not in picks:
        return {}
    peers = [p for p in TIMED_PEERS if p in picks]
    return {p: comparable_nmtkit(site, better(picks[p])[1], threads, "pick-nmtkit") for p in peers}


def decode_picks(
    site: Site, beams: list[int], threads: int, picks: dict[str, Any], mates: dict[str, str]
) -> list[dict[str, Any]]:
    """The picks decoded at comparable BLEU, as bin/bench-marian decodes: each timed peer's pick
    (Marian's, fairseq's, OpenNMT-py's; of its two models the better) beside nmtkit's kept
    checkpoint of its own pick's run nearest that BLEU (``mates``, :func:`beside`), then nmtkit's pick itself.
    Joey NMT has no row: its translate times loading with search."""
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    pairs = [{"nmtkit": mine, peer: better(picks[peer])[0]} for peer, mine in mates.items()]
    own = [{"nmtkit": better(picks["nmtkit"])[0]}] if "nmtkit" in picks else []
    for models in [*pairs, *own]:
        for r in decoding(site, beams, threads, models):
            rows[r["toolkit"], r["model"], r["path"], r["beam"], r["threads"]] = r  # each once
    return list(rows.values())


def fastest(rows: list[dict[str, Any]], toolkit: str, model: str, beam: int, threads: int) -> dict[str, Any] | None:
    """The decoding row of ``model``'s fastest path at ``beam`` on ``threads`` threads among those
    within a BLEU point of its fp32 path's (:func:`.bench_marian.fastest_path`)."""
    mine = [r for r in rows if (r["toolkit"], r["model"], r["beam"], r["threads"]) == (toolkit, model, beam, threads)]
    mine.sort(key=lambda r: r["path"] != "fp32")
    return next(r for r in mine if r["path"] == fastest_path(mine)) if mine else None


def lead(results: dict[str, Any], threads: int, beam: int = 5) -> list[str]:
    """The one table docs/benchmarks.md leads with: each toolkit's recipe and pick, its run, its
    two models' test BLEU, and its fastest decoding at beam ``beam`` of its better model, a peer's
    beside nmtkit's at the peer's BLEU."""
    out = [
        "| toolkit | recipe | pick | updates | target tok/s | peak RSS | test BLEU, last model | best validated "
        f"| decoding tok/s, beam {beam} | nmtkit at that BLEU |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows, mates = results.get("decode", []), results.get("beside", {})
    for toolkit, r in results["picks"].items():
        speed = f"{r['tgt_tok_per_s']:,.0f}" if r.get("tgt_tok_per_s") else "–"
        timed = fastest(rows, toolkit, better(r)[0], beam, threads)
        decoding = f"{timed['tok_per_s']:,.0f} ({timed['path']})" if timed else "–"
        mate = fastest(rows, "nmtkit", mates[toolkit], beam, threads) if toolkit in mates else None
        near = f"{mate['tok_per_s']:,.0f} ({mate['path']}) at {mate['bleu']:.2f}" if mate else "–"
        out.append(
            f"| {NAMES[toolkit]} | {RECIPES[toolkit].source} | {r['point']} | {r['updates']:,} | {speed} | "
            f"{r['peak_rss_mb']:,.0f} MB | {r['bleu_last']:.2f} | {r['bleu']:.2f} | {decoding} | {near} |"
        )
    return out


def table(results: dict[str, Any]) -> str:
    out = [
        f"Machine: {results['machine']}",
        "",
        f"Sweep: {results['updates']} updates a point; dev cross-entropy in nats per target unit",
        "",
        "| toolkit | point | updates | dev CE | minutes |",
        "|---|---|---:|---:|---:|",
    ]
    for r in results["sweep"]:
        ce = f"{r['dev_ce']:.3f}" if r.get("dev_ce") is not None else "diverged"
        mark = " **(pick)**" if r["point"] == results["picked"].get(r["toolkit"]) else ""
        out.append(f"| {r['toolkit']} | {r['point']}{mark} | {r['updates']:,} | {ce} | {r['wall_s'] / 60:.1f} |")
    if results["picks"]:
        out += ["", f"Picks: {results['minutes']:g} minutes each, alone on the cores", ""]
        out += lead(results, results["threads"])
    if results.get("decode"):
        out += ["", "Decoding the test verses at comparable BLEU (search time, model loading apart)", ""]
        out.append(decode_table(results["decode"]))
    return "\n".join(out)


NAMES = {"nmtkit": "nmtkit", "marian": "Marian", "fairseq": "fairseq", "joeynmt": "Joey NMT", "opennmt": "OpenNMT-py"}


def figures(results: dict[str, Any]) -> dict[str, float]:
    """The picks' figures as results/bench-sweep.json holds them: each toolkit's test BLEU of its
    last model and of its best validated one, and its updates in the budget; and for each timed
    peer, nmtkit's fastest decoding at its BLEU over the peer's (beam 5)."""
    out: dict[str, float] = {}
    for toolkit, r in results["picks"].items():
        name = NAMES[toolkit]
        out |= {f"{name} BLEU (last)": r["bleu_last"], f"{name} BLEU (best)": r["bleu"]}
        out[f"{name} updates"] = r["updates"]
    rows, threads = results.get("decode", []), int(results.get("threads", 0))
    for peer, mine in results.get("beside", {}).items():
        theirs = fastest(rows, peer, better(results["picks"][peer])[0], 5, threads)
        ours = fastest(rows, "nmtkit", mine, 5, threads)
        if theirs and ours:
            out[f"nmtkit's decoding tokens/s over {NAMES[peer]}'s (beam 5)"] = ours["tok_per_s"] / theirs["tok_per_s"]
    return out


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=CHECKOUT / "data" / "bible")
    ap.add_argument("--toolkits", default=",".join(RECIPES), help="which toolkits, in this order")
    ap.add_argument("--updates", type=int, default=200, help="updates of each point of the sweep")
    ap.add_argument("--minutes", type=float, default=20.0, help="wall minutes of each pick's run")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--beams", default="5,12", help="the beams of the decoding rows")
    ap.add_argument(
        "--stage", choices=("sweep", "picks", "all"), default="all", help="stop after the sweep, or after the picks"
    )
    ap.add_argument(
        "--pick",
        action="append",
        default=[],
        metavar="TOOLKIT=POINT",
        help="train POINT (a point's name as the sweep's table writes it) for TOOLKIT, whose sweep is not run "
        "(one made before, on any machine: its figures count updates, not time)",
    )
    return ap


def given_picks(picks: list[str]) -> dict[str, Point]:
    """The points given by --pick, each a point of its toolkit's sweep or a rate past its grid."""
    out = {}
    for given in picks:
        toolkit, _, name = given.partition("=")
        if toolkit not in RECIPES:
            fail(PROG, f"--pick {given}: unknown toolkit {toolkit!r}; choose from {', '.join(RECIPES)}")
        recipe = RECIPES[toolkit]
        rate, schedule = parts(name)
        known = any(p.name == name for p in recipe.points)
        if not known and not (
            re.fullmatch(r"lr [\d.]+(e[+-]?\d+)?(, .+)?", name) and schedule in dict(recipe.schedules)
        ):
            fail(PROG, f"--pick {given}: {toolkit} has no point {name!r} (e.g. {recipe.points[0].name!r})")
        out[toolkit] = recipe.point(name)
    return out


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    site = Site(bench_dir(), args.data)
    toolkits = [t for t in args.toolkits.split(",") if t]
    if unknown := [t for t in toolkits if t not in RECIPES]:
        fail(PROG, f"unknown toolkit {unknown[0]!r}; choose from {', '.join(RECIPES)}")
    given = given_picks(args.pick)
    if not (site.data_bin / "manifest.json").exists():
        fail(PROG, f"{args.data}/data-bin-bpe8000: no demo data-bin; run `make data` first")
    prepare(site.data_bin, args.data / "raw" / "test.en", site.units)
    here = []
    for toolkit in toolkits:
        if installed(site, toolkit):
            here.append(toolkit)
        else:
            print(f"{PROG}: {toolkit} is not installed; left out (bench/peers/install.sh {toolkit})", file=sys.stderr)
    results: dict[str, Any] = {
        "machine": describe(machine()),
        "updates": args.updates,
        "minutes": args.minutes,
        "threads": args.threads,
        "sweep": [],
        "picked": {},
        "picks": {},
    }
    for toolkit in here:  # the whole sweep first: the picks need the cores alone
        if toolkit in given:
            results["picked"][toolkit] = given[toolkit].name
            continue
        rows = sweep_toolkit(site, RECIPES[toolkit], args.updates, args.threads)
        results["sweep"] += rows
        results["picked"][toolkit] = best_point(rows)["point"]
    if args.stage != "sweep":
        for toolkit in here:
            point = RECIPES[toolkit].point(results["picked"][toolkit])
            results["picks"][toolkit] = pick_run(site, point, args.minutes, args.threads)
    if args.stage == "all":
        results["beside"] = mates = beside(site, args.threads, results["picks"])
        results["decode"] = decode_picks(
            site, [int(b) for b in args.beams.split(",")], args.threads, results["picks"], mates
        )
    write_text(site.work / "sweep.json", json.dumps(results, indent=1))
    if args.stage == "all" and results["picks"]:
        title = f"Each toolkit's RNN recipe at its best point, {args.minutes:g} minutes alone: test BLEU at beam 5"
        record("bench-sweep", title, "make bench-sweep", figures(results), results["machine"])
    print(table(results))
