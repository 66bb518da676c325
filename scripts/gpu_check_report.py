#!/usr/bin/env python3
"""Readings and the summary of scripts/gpu-check.sh (standard library only: it runs on
the bare GPU machine and here alike).

Each subcommand reads what decodelab wrote (run, roofline and lab JSON), checks one
claim, prints a short table, writes its figures as JSON for the summary, and exits 1
when the claim does not hold (2 when an input is missing or malformed):

  tokens A.json B.json              the two runs generated the same tokens
  bandwidth --roofline R.json --run LABEL=RUN.json ... --out F.json
                                    decode bandwidth as a share of the copy bandwidth
  lab LAB.json [--compare LABEL=COMPARE.json ...] --out F.json
                                    every bug slower than its fixed twin, tokens kept (on
                                    CUDA up to a near-tie of the fixed run: lab/run/token_agreement.h);
                                    a compare's bug judged by its interval: its low end above 1
  summary --work DIR --results DIR --mode real|dry-run
                                    summary.md (to paste into docs/gpu.md) and summary.json
"""
import argparse
import datetime
import json
import os
import sys

# On a GPU a decode step cannot stream its bytes faster than a device-to-device copy moves
# them by more than measurement slack: above this share the byte count or the timer is
# wrong (--max-share; a CPU's copy pays write-allocate traffic, so its bound is looser).
MAX_PLAUSIBLE_SHARE = 1.2


class InputProblem(Exception):
    pass


def load_json(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError) as error:
        raise InputProblem(f"{path}: {error}")


def field(document, path, where):
    value = document
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            raise InputProblem(f"{where}: no '{path}'")
        value = value[key]
    return value


def write_json(path, document):
    if path:
        with open(path, "w") as handle:
            json.dump(document, handle, indent=2)
            handle.write("\n")


# --- tokens ------------------------------------------------------------------------------
def command_tokens(args):
    a = field(load_json(args.a), "outputs", args.a)
    b = field(load_json(args.b), "outputs", args.b)
    if len(a) != len(b):
        print(f"tokens differ: {len(a)} requests in {args.a}, {len(b)} in {args.b}")
        return 1
    for request, (left, right) in enumerate(zip(a, b)):
        if left != right:
            position = next((i for i, (x, y) in enumerate(zip(left, right)) if x != y), min(len(left), len(right)))
            print(f"tokens differ: request {request}, first at token {position}")
            return 1
    count = sum(len(tokens) for tokens in a)
    print(f"tokens identical: {len(a)} requests, {count} tokens")
    return 0


# --- bandwidth -----------------------------------------------------------------------------
def command_bandwidth(args):
    roofline = load_json(args.roofline)
    copy = float(field(roofline, "copy.bandwidth_gbps", args.roofline))
    copy_spread = float(field(roofline, "copy.timing.spread", args.roofline))
    if copy <= 0:
        raise InputProblem(f"{args.roofline}: copy bandwidth {copy}")
    rows, problems = [], []
    for item in args.run:
        label, _, path = item.partition("=")
        run = load_json(path)
        achieved = float(field(run, "metrics.decode_bandwidth_gbps", path))
        spread = float(field(run, "intervals.decode_bandwidth_gbps.relative_ci", path))
        share = achieved / copy
        rows.append({
            "run": label,
            "model": field(run, "model.name", path),
            "dtype": field(run, "model.dtype", path),
            "batch_size": field(run, "scenario.workload.batch_size", path),
            "cuda_graphs": bool(field(run, "scenario.run.cuda_graphs", path)),
            "decode_wall_ms_per_step": field(run, "metrics.decode_wall_ms_per_step", path),
            "decode_bandwidth_gbps": achieved,
            "decode_bandwidth_relative_ci": spread,
            "share_of_copy": share,
            "device": run.get("device", ""),
        })
        if not share > 0 or (args.max_share > 0 and share > args.max_share):
            problems.append(f"{label}: {share:.0%} of the copy bandwidth is implausible (above {args.max_share:.0%})")
    figures = {"copy_bandwidth_gbps": copy, "copy_spread": copy_spread, "runs": rows,
               "max_share_judged": args.max_share if args.max_share > 0 else None,
               "read_bandwidth_gbps": roofline.get("read", {}).get("bandwidth_gbps")}
    write_json(args.out, figures)
    print(f"device copy bandwidth: {copy:.1f} GB/s (spread {copy_spread:.1%})")
    if args.max_share <= 0:
        print("shares not judged: no plausible bound was given (--max-share 0)")
    print("| run | wall ms/step | decode GB/s | share of copy |")
    print("| --- | ---: | ---: | ---: |")
    for row in rows:
        print(f"| {row['run']} | {row['decode_wall_ms_per_step']:.3f} | {row['decode_bandwidth_gbps']:.1f} | "
              f"{row['share_of_copy']:.1%} |")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


# --- lab --------------------------------------------------------------------------------------
def command_lab(args):
    document = load_json(args.lab)
    rows = document["rows"] if isinstance(document, dict) and "rows" in document else document
    if isinstance(document, dict) and document.get("complete") is False:
        raise InputProblem(f"{args.lab}: the lab did not complete")
    if not isinstance(rows, list) or not rows:
        raise InputProblem(f"{args.lab}: no lab rows")
    readings, problems = [], []
    for row in rows:
        bug = field(row, "bug", args.lab)
        slowdown = float(field(row, "end_to_end_slowdown", args.lab))
        same = bool(field(row, "same_tokens", args.lab))
        reading = {"bug": bug, "bugs": row.get("bugs", ""), "end_to_end_slowdown": slowdown,
                   "decode_slowdown": row.get("decode_slowdown"), "same_tokens": same,
                   "verdict": row.get("verdict", ""), "expected": row.get("headline", {}).get("expected")}
        # Whatever interval the lab reports beside the slowdown (its key names may grow).
        for key, value in row.items():
            if "interval" in key:
                reading[key] = value
        readings.append(reading)
        if not slowdown > 1.0:
            problems.append(f"{bug}: slowdown {slowdown:.3f}x, not above 1 (the bug should cost time)")
        if not same:
            problems.append(f"{bug}: the bug changed the generated tokens")
    for item in args.compare or []:
        label, _, path = item.partition("=")
        comparison = load_json(path)
        measured = field(comparison, "headline.measured", path)
        metric = field(comparison, "headline.metric", path)
        words = metric.replace("_", "-")  # text for people says "end-to-end"; the JSON keeps its name
        low, median = float(field(measured, "low", path)), float(field(measured, "median", path))
        same = bool(field(comparison, "same_tokens", path))
        tokens = comparison.get("token_agreement", {}).get("detail", "")
        readings.append({"bug": label, "bugs": label, "end_to_end_slowdown": median if metric == "end_to_end" else
                         float(field(comparison, "end_to_end_slowdown.median", path)),
                         "decode_slowdown": median if metric == "decode" else None, "same_tokens": same,
                         "judged_by": f"{words} slowdown interval {low:.2f}-{float(measured.get('high', median)):.2f}x",
                         "token_agreement": tokens, "expected": field(comparison, "headline", path).get("expected")})
        if not low > 1.0:
            problems.append(f"{label}: the {words} slowdown's interval reaches {low:.3f}x, not above 1")
        if not same:
            problems.append(f"{label}: the bug changed the generated tokens ({tokens})")
    write_json(args.out, {"rows": readings, "device": rows[0].get("device", ""), "backend": rows[0].get("backend", "")})
    print("| bug | end-to-end slowdown | decode slowdown | expected | same tokens |")
    print("| --- | ---: | ---: | --- | --- |")
    for r in readings:
        expected = r["expected"]
        expected_text = f"{expected['min']:g}-{expected['max']:g}x" if isinstance(expected, dict) else "-"
        decode = f"{r['decode_slowdown']:.2f}x" if isinstance(r["decode_slowdown"], (int, float)) else "-"
        print(f"| {r['bug']} | {r['end_to_end_slowdown']:.2f}x | {decode} | {expected_text} | {'yes' if r['same_tokens'] else 'NO'} |")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


# --- summary ----------------------------------------------------------------------------------
STATUS_FAILS = {"failed", "timed out"}


def read_stages(work):
    stages = []
    path = os.path.join(work, "stages.tsv")
    if not os.path.exists(path):
        return stages
    with open(path) as handle:
        for line in handle:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 4:
                continue
            name, status, seconds, required = parts[:4]
            claims = {"checked": [], "not_checked": [], "notes": []}
            claims_path = os.path.join(work, f"{name}.claims")
            if os.path.exists(claims_path):
                with open(claims_path) as claims_file:
                    for claim in claims_file:
                        kind, _, text = claim.rstrip("\n").partition(" ")
                        key = {"CHECKED": "checked", "NOT_CHECKED": "not_checked", "NOTE": "notes"}.get(kind)
                        if key:
                            claims[key].append(text)
            stages.append({"name": name, "status": status, "seconds": int(seconds), "required": required == "1",
                           **claims})
    return stages


def stage_fails(stage):
    if stage["status"] in STATUS_FAILS:
        return True
    if stage["status"] == "passed" and not stage["checked"]:
        return True  # a pass that does not say what it checked proves nothing
    return stage["required"] and stage["status"].startswith("not run: out of time")


def read_environment(work):
    environment = {}
    path = os.path.join(work, "environment.txt")
    if os.path.exists(path):
        with open(path) as handle:
            for line in handle:
                key, _, value = line.rstrip("\n").partition("=")
                if key:
                    environment[key] = value
    return environment


def optional_json(work, name):
    path = os.path.join(work, name)
    try:
        return load_json(path) if os.path.exists(path) else None
    except InputProblem:
        return None


def markdown_summary(summary):
    env = summary["environment"]
    lines = []
    if summary["mode"] == "dry-run":
        lines.append(f"### GPU check dry run, {summary['date']} (CPU stand-ins: nothing here is a GPU result)")
    else:
        lines.append(f"### GPU check, {summary['date']}")
    lines.append("")
    lines.append(f"- device: {env.get('device', 'unknown')}; driver {env.get('driver', '?')} "
                 f"(CUDA {env.get('driver_cuda', '?')}); nvcc {env.get('nvcc', 'none')}")
    lines.append(f"- binaries: {env.get('binaries', '?')}; commit {summary['commit']}")
    lines.append(f"- total {summary['total_seconds']} s; result: **{'PASS' if summary['passed'] else 'FAIL'}**")
    lines.append("")
    lines.append("| stage | status | s | checked | not checked |")
    lines.append("| --- | --- | ---: | --- | --- |")
    for stage in summary["stages"]:
        checked = "; ".join(stage["checked"]) or "-"
        not_checked = "; ".join(stage["not_checked"]) or "-"
        lines.append(f"| {stage['name']} | {stage['status']} | {stage['seconds']} | {checked} | {not_checked} |")
    notes = [f"{stage['name']}: {text}" for stage in summary["stages"] for text in stage["notes"]]
    if notes:
        lines += ["", "Notes:", ""] + [f"- {note}" for note in notes]
    bandwidth = summary["figures"].get("bandwidth")
    if bandwidth:
        lines += ["", f"Decode bandwidth at batch 1 against the device copy bandwidth measured in the same run "
                  f"({bandwidth['copy_bandwidth_gbps']:.1f} GB/s, read + written):", "",
                  "| run | wall ms/step | decode GB/s | share of copy |", "| --- | ---: | ---: | ---: |"]
        for row in bandwidth["runs"]:
            lines.append(f"| {row['run']} | {row['decode_wall_ms_per_step']:.3f} | {row['decode_bandwidth_gbps']:.1f} | "
                         f"{row['share_of_copy']:.1%} |")
        if "max_share_judged" in bandwidth and bandwidth["max_share_judged"] is None:
            lines += ["", "The shares were not judged: no plausible bound holds on this device."]
    lab = summary["figures"].get("lab")
    if lab:
        lines += ["", f"The five-bug lab ({lab.get('backend', '')}):", "",
                  "| bug | end-to-end slowdown | decode slowdown | same tokens |", "| --- | ---: | ---: | --- |"]
        for row in lab["rows"]:
            decode = f"{row['decode_slowdown']:.2f}x" if isinstance(row.get("decode_slowdown"), (int, float)) else "-"
            lines.append(f"| {row['bug']} | {row['end_to_end_slowdown']:.2f}x | {decode} | {'yes' if row['same_tokens'] else 'NO'} |")
    logits = summary["figures"].get("logits")
    if logits:
        lines += ["", "Logit agreement (`decodelab diff-logits`):", ""]
        lines += [f"- {line}" for line in logits]
    lines.append("")
    return "\n".join(lines)


def command_summary(args):
    stages = read_stages(args.work)
    figures = {}
    bandwidth = optional_json(args.work, "bandwidth.figures.json")
    if bandwidth:
        figures["bandwidth"] = bandwidth
    lab = optional_json(args.work, "lab.figures.json")
    if lab:
        figures["lab"] = lab
    logits_path = os.path.join(args.work, "logits.figures.txt")
    if os.path.exists(logits_path):
        with open(logits_path) as handle:
            figures["logits"] = [line.strip() for line in handle if line.strip()]
    summary = {
        "mode": args.mode,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": args.commit,
        "total_seconds": args.total_seconds,
        "environment": read_environment(args.work),
        "stages": stages,
        "figures": figures,
    }
    summary["passed"] = bool(stages) and not any(stage_fails(stage) for stage in stages)
    write_json(os.path.join(args.results, "summary.json"), summary)
    markdown = markdown_summary(summary)
    with open(os.path.join(args.results, "summary.md"), "w") as handle:
        handle.write(markdown)
    print(markdown)
    return 0 if summary["passed"] else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    tokens = commands.add_parser("tokens")
    tokens.add_argument("a")
    tokens.add_argument("b")
    bandwidth = commands.add_parser("bandwidth")
    bandwidth.add_argument("--roofline", required=True)
    bandwidth.add_argument("--run", action="append", required=True, help="LABEL=RUN.json")
    bandwidth.add_argument("--max-share", type=float, default=MAX_PLAUSIBLE_SHARE,
                           help="the largest plausible share of the copy bandwidth; 0: judge none")
    bandwidth.add_argument("--out")
    lab = commands.add_parser("lab")
    lab.add_argument("lab")
    lab.add_argument("--compare", action="append", help="LABEL=COMPARE.json (decodelab compare --json)")
    lab.add_argument("--out")
    summary = commands.add_parser("summary")
    summary.add_argument("--work", required=True)
    summary.add_argument("--results", required=True)
    summary.add_argument("--mode", choices=["real", "dry-run"], required=True)
    summary.add_argument("--commit", default="unknown")
    summary.add_argument("--total-seconds", type=int, default=0)
    args = parser.parse_args()
    handler = {"tokens": command_tokens, "bandwidth": command_bandwidth, "lab": command_lab,
               "summary": command_summary}[args.command]
    try:
        return handler(args)
    except InputProblem as problem:
        print(f"gpu_check_report {args.command}: {problem}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
