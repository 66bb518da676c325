#!/usr/bin/env python3
"""The accuracy table's bracket and verdict (scripts/prediction-accuracy.sh).

Each row of the table is priced with the roofs measured just before its runs; this adds the
same prediction priced with the roofs measured just after them (the next row's), and a
verdict that weighs both sides' uncertainty against the 20% the issue asks for:

  holds                   the measured median within 20% of the prediction (the error column)
  holds within the noise  not so, but the measured interval overlaps the 20% band around the
                          predictions from both roofs: the miss is within what the machine
                          moved during the row (its memory path, the measured pairs' spread)
  misses                  outside even that: the model's miss

usage: accuracy-bracket.py row ROW.md CHECK.json [AFTER.json]
         ROW.md: `predict --check --row` output (a header and separator line first, or not);
         CHECK.json: its --json; AFTER.json: `predict --json` of the same scenario priced with
         the roofs after. Prints ROW.md's lines with two cells added.
       accuracy-bracket.py sweep NAME SWEEP.json [AFTER.json]
         SWEEP.json: `sweep --json`; AFTER.json: `predict --json` of the sweep priced with the
         roofs after. Prints one markdown row per point.
"""
import json
import sys

LIMIT = 0.20


def verdict(measured, low, high, before, after):
    """The verdict of one figure: measured median and interval ends, the two predictions."""
    if abs(measured / before - 1) <= LIMIT:
        return "holds"
    predictions = [p for p in (before, after) if p]
    band_low, band_high = min(predictions) * (1 - LIMIT), max(predictions) * (1 + LIMIT)
    if low <= band_high and high >= band_low:
        return "holds within the noise"
    return "misses"


def after_cell(measured, after, number_format, unit=""):
    """The prediction with the roofs after and the error against it: "1.30x (+15%)", or "-"."""
    if not after:
        return "-"
    return f"{after:{number_format}}{unit} ({100 * (measured / after - 1):+.0f}%)"


def load(path):
    if not path:
        return None
    with open(path) as file:
        return json.load(file)


def row(row_path, check_path, after_path=None):
    check = load(check_path)
    check = check[0] if isinstance(check, list) else check
    figure = check["check"]["decode_slowdown"]
    after = load(after_path)
    after = after[0] if isinstance(after, list) else after
    predicted_after = after["decode_slowdown"] if after else None
    measured = figure["measured"]
    low = figure.get("measured_low", measured)
    high = figure.get("measured_high", measured)
    cells = f" {after_cell(measured, predicted_after, '.2f', 'x')} | {verdict(measured, low, high, figure['predicted'], predicted_after)} |"
    with open(row_path) as file:
        for line in file.read().splitlines():
            if line.startswith("| scenario"):
                print(line + " decode_slowdown predicted with the roofs after | verdict |")
            elif line.startswith("| ---"):
                print(line + " ---: | --- |")
            elif line.startswith("|"):
                print(line + cells)
            else:
                print(line)


def sweep(name, sweep_path, after_path=None):
    points = load(sweep_path)
    after = load(after_path)
    for index, point in enumerate(points):
        swept = ", ".join(f"{key} {value}" for key, value in point["swept"].items())
        interval = point["intervals"]["decode_tokens_per_s"]
        measured = interval["median"]
        text = f"{measured:.1f} ±{100 * interval['relative_ci']:.1f}%" + (" noisy" if interval["noisy"] else "")
        predicted = point.get("predicted_decode_tokens_per_s")
        if predicted is None:
            unavailable = point.get("prediction", {}).get("unavailable", "-")
            print(f"| {name} | {swept} | {text} | - | - | {unavailable} | - | - |")
            continue
        predicted_after = None
        if after and index < len(after):
            # The same point: predict --json's "point" holds each swept key=value.
            if all(f"{key}={value}" in after[index]["point"] for key, value in point["swept"].items()):
                predicted_after = after[index]["prediction"]["decode_tokens_per_s"]
        error = point["decode_tokens_per_s_prediction_error"]
        judged = verdict(measured, interval.get("low", measured), interval.get("high", measured), predicted, predicted_after)
        print(f"| {name} | {swept} | {text} | {predicted:.1f} | {100 * error:+.0f}% | "
              f"{point['prediction']['decode_bound']} | {after_cell(measured, predicted_after, '.1f')} | {judged} |")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "row":
        row(*sys.argv[2:5])
    elif len(sys.argv) >= 4 and sys.argv[1] == "sweep":
        sweep(*sys.argv[2:5])
    else:
        sys.exit(__doc__)
