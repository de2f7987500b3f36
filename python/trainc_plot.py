"""Curves of trainc runs, drawn with matplotlib.

    trainc_plot.py [-o curves.png] [--title TEXT] LOG.jsonl [LOG.jsonl ...]

Each file is either a trainer's --log (JSON lines: one record per step with
"step", "loss", "lr" and, where the run has them, "momentum" or "beta1",
"grad_norm" and "loss_scale"; one per evaluation with "eval_loss" and
"eval_accuracy") or the curve of an LR range test (--find-lr-out PREFIX writes
PREFIX.jsonl: one record per step with "lr", "loss" and "smoothed_loss", and a
last record with the suggestions) or the lineage of a population (`trainc pbt`
writes RUN/lineage.jsonl: "start", "ready" and "exploit" events). Training logs are drawn side by side, one
colour per run: the loss, the held-out metrics, the learning rate and momentum,
and the gradient norm against the steps. A range test is drawn as its smoothed
loss against the learning rate (log scale) with the suggested rates marked.
A lineage is drawn as each member's metric at its ready points and each searched
hyperparameter against the steps, one colour per member; a dotted line joins a
member's copy to the parent it copied.

The trainer runs this script for --find-lr (its text is compiled into the
runtime), and so does `trainc plot`. Exit status: 0 written, 3 matplotlib
missing, other: bad input (the message names the file and line).
"""

import argparse
import json
import math
import os
import sys
import tempfile


def read_records(path):
    """The records of a JSON-lines file; a line that is not a JSON object is
    an error naming the file and the line."""
    records = []
    if not os.path.isfile(path):
        raise SystemExit("error: %s is not a file" % path)
    with open(path, encoding="utf-8") as stream:
        for number, line in enumerate(stream, 1):
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except ValueError as error:
                raise SystemExit("error: %s:%d is not JSON (%s)" % (path, number, error)) from None
            if not isinstance(record, dict):
                raise SystemExit("error: %s:%d is not a JSON object" % (path, number))
            records.append(record)
    return records


def is_range_test(records):
    return any("smoothed_loss" in r for r in records)


def finite(value):
    return isinstance(value, (int, float)) and math.isfinite(value)


def series(records, key, x_key="step"):
    """(x, y) of the records that have both keys with finite values."""
    xs, ys = [], []
    for r in records:
        if finite(r.get(x_key)) and finite(r.get(key)):
            xs.append(r[x_key])
            ys.append(r[key])
    return xs, ys


def eval_points(records, key):
    """(step, value) of the evaluations: at the record's own "step", else at
    the last step of its epoch."""
    last_step = {}
    for r in records:
        if "step" in r and "epoch" in r and "loss" in r:
            last_step[r["epoch"]] = max(last_step.get(r["epoch"], 0), r["step"])
    xs, ys = [], []
    for r in records:
        if key not in r or not finite(r[key]):
            continue
        step = r.get("step", last_step.get(r.get("epoch")))
        if finite(step):
            xs.append(step)
            ys.append(r[key])
    return xs, ys


def is_lineage(records):
    return any(r.get("event") in ("start", "ready", "exploit") for r in records)


def member_paths(records, field):
    """For each member, its (step, value) points in order: the start and
    ready points give `field` (the metric's "score" or one of "hypers"), an
    exploit restarts the member's path at its parent's step with the copied
    and explored values. Also the copies as ((parent step, parent value),
    (step, value)) pairs."""
    paths, copies = {}, []
    def value_of(record):
        if field == "score":
            return record.get("score")
        return record.get("hypers", {}).get(field)
    for r in records:
        member, step = r.get("member"), r.get("step")
        if not isinstance(member, int) or not finite(step):
            continue
        path = paths.setdefault(member, [])
        event = r.get("event")
        if event == "start" and field != "score":
            path.append((step, value_of(r)))
        elif event == "ready":
            value = value_of(r)
            path.append((step, value if finite(value) else None))
        elif event == "exploit":
            if field == "score":
                value = r.get("parent_score")
                start = value
            else:
                value = r.get("hypers", {}).get(field)
                start = r.get("hypers_before", {}).get(field)
            if finite(value):
                if field != "score" and finite(start):
                    copies.append(((step, start), (step, value)))
                path.append(None)  # a break in the member's own line
                path.append((step, value))
    return paths, copies


def draw_population(plt, runs, title):
    records = [r for _, rs in runs for r in rs]
    metric = next((r["metric"] for r in records if r.get("event") == "ready" and "metric" in r),
                  "score")
    hypers = sorted({name for r in records for name in r.get("hypers", {})})
    panels = [("score", metric)] + [(name, name) for name in hypers]
    columns = 2 if len(panels) > 1 else 1
    rows = (len(panels) + columns - 1) // columns
    figure, grid = plt.subplots(rows, columns, figsize=(6 * columns, 3.4 * rows), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for index, (field, name) in enumerate(panels):
        axes = grid[index // columns][index % columns]
        paths, copies = member_paths(records, field)
        for member in sorted(paths):
            colour = colours[member % len(colours)]
            xs, ys = [], []
            for point in paths[member] + [None]:
                if point is None or point[1] is None:
                    if xs:
                        axes.plot(xs, ys, color=colour, marker="o", markersize=3,
                                  label=None if any(l.get_label() == "member %d" % member
                                                    for l in axes.get_lines())
                                  else "member %d" % member,
                                  drawstyle="default" if field == "score" else "steps-post")
                    xs, ys = [], []
                    continue
                xs.append(point[0])
                ys.append(point[1])
        for (x0, y0), (x1, y1) in copies:
            axes.plot([x0, x1], [y0, y1], color="grey", linestyle=":", linewidth=0.8)
        values = [v for path in paths.values() for p in path if p and finite(p[1])
                  for v in [p[1]]]
        if field != "score" and values and min(values) > 0 and max(values) > 10 * min(values):
            axes.set_yscale("log")
        axes.set_title(name + (" at the ready points" if field == "score" else ""))
        axes.set_xlabel("step")
        axes.grid(True, alpha=0.3)
        if index == 0 and len(paths) <= 16:
            axes.legend(fontsize=7, ncol=2)
    for index in range(len(panels), rows * columns):
        grid[index // columns][index % columns].set_visible(False)
    figure.suptitle(title or "population")
    figure.tight_layout()
    return figure


def draw_range_test(plt, runs, title):
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for label, records in runs:
        points = [r for r in records if "smoothed_loss" in r]
        lrs = [r["lr"] for r in points if finite(r.get("smoothed_loss"))]
        smoothed = [r["smoothed_loss"] for r in points if finite(r.get("smoothed_loss"))]
        raw_lr, raw = series(points, "loss", "lr")
        named = (label + ": ") if len(runs) > 1 else ""
        line, = axes.plot(lrs, smoothed, label=named + "smoothed loss")
        axes.plot(raw_lr, raw, color=line.get_color(), alpha=0.25, linewidth=0.8,
                  label=named + "loss of each step")
        summary = next((r for r in records if "suggested_lr" in r), None)
        if summary is None:
            continue
        marks = [("steepest_lr", "steepest descent", "v"),
                 ("minimum_lr", "lowest loss / 10", "o")]
        for key, what, marker in marks:
            lr = summary.get(key)
            if not finite(lr):
                continue
            # The smoothed loss at the suggested rate (nearest recorded rate).
            nearest = min(range(len(lrs)), key=lambda i: abs(math.log(lrs[i] / lr)),
                          default=None)
            if nearest is None:
                continue
            chosen = " (suggested)" if lr == summary["suggested_lr"] else ""
            axes.plot([lr], [smoothed[nearest]], marker=marker, markersize=9, linestyle="none",
                      color=line.get_color(),
                      label="%s%s: lr %.3g%s" % (named, what, lr, chosen))
    axes.set_xscale("log")
    axes.set_xlabel("learning rate")
    axes.set_ylabel("training loss")
    shown = [r[key] for _, records in runs for r in records
             for key in ("smoothed_loss", "loss") if finite(r.get(key))]
    lowest = min((r["smoothed_loss"] for _, records in runs for r in records
                  if finite(r.get("smoothed_loss"))), default=None)
    if lowest is not None and lowest > 0:
        # The range test stops at 4x the lowest smoothed loss: show the
        # descent, not the blow-up.
        axes.set_ylim(bottom=0.9 * min(v for v in shown if v > 0), top=4 * lowest)
    axes.set_title(title or "LR range test")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    return figure


def draw_training(plt, runs, title):
    panels = [("training loss", [("loss", "")]),
              ("held-out", [("eval_loss", "loss"), ("eval_accuracy", "accuracy")]),
              ("learning rate", [("lr", "")]),
              ("momentum / beta1", [("momentum", "momentum"), ("beta1", "beta1")]),
              ("gradient norm", [("grad_norm", "")]),
              ("loss scale", [("loss_scale", "")])]
    present = [(name, keys) for name, keys in panels
               if any(any(key in r for r in records for key, _ in keys) for _, records in runs)]
    columns = 2 if len(present) > 1 else 1
    rows = (len(present) + columns - 1) // columns
    figure, grid = plt.subplots(rows, columns, figsize=(6 * columns, 3.2 * rows), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for index, (name, keys) in enumerate(present):
        axes = grid[index // columns][index % columns]
        for run, (label, records) in enumerate(runs):
            colour = colours[run % len(colours)]
            for key, what in keys:
                if key.startswith("eval_"):
                    xs, ys = eval_points(records, key)
                    style = {"marker": "o", "linestyle": "-" if key == "eval_loss" else "--"}
                else:
                    xs, ys = series(records, key)
                    style = {}
                if xs:
                    axes.plot(xs, ys, color=colour, label=label + (" " + what if what else ""),
                              **style)
        axes.set_title(name)
        axes.set_xlabel("step")
        if name in ("gradient norm", "loss scale"):
            axes.set_yscale("log")
        axes.grid(True, alpha=0.3)
        if len(runs) > 1 or any(what for _, what in keys):
            axes.legend(fontsize=8)
    for index in range(len(present), rows * columns):
        grid[index // columns][index % columns].set_visible(False)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    return figure


def main(argv):
    parser = argparse.ArgumentParser(prog="trainc plot", description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", metavar="LOG.jsonl")
    parser.add_argument("-o", "--output", default="curves.png", metavar="OUT.png")
    parser.add_argument("--title", default="")
    args = parser.parse_args(argv)
    if not args.output.endswith(".png"):
        raise SystemExit("error: -o %s: the plot is a PNG; name it *.png" % args.output)
    runs = []
    for path in args.logs:
        records = read_records(path)
        if not records:
            raise SystemExit("error: %s holds no records" % path)
        runs.append((os.path.splitext(os.path.basename(path))[0], records))
    kinds = {"lineage" if is_lineage(records) else "range" if is_range_test(records)
             else "training" for _, records in runs}
    if len(kinds) > 1:
        raise SystemExit("error: LR range tests, training logs and lineages go in separate "
                         "plots")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return 3  # the caller says so, and may try another python3
    draw = {"range": draw_range_test, "lineage": draw_population,
            "training": draw_training}[kinds.pop()]
    figure = draw(plt, runs, args.title)
    # Written next to the target and renamed over it: a reader never sees half a PNG.
    folder = os.path.dirname(os.path.abspath(args.output))
    handle, temporary = tempfile.mkstemp(prefix=".plot-", suffix=".png", dir=folder)
    os.close(handle)
    try:
        figure.savefig(temporary, dpi=110)
        os.replace(temporary, args.output)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
