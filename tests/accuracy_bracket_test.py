#!/usr/bin/env python3
"""scripts/accuracy-bracket.py: the accuracy table's verdict and the cells it adds, on
hand-made `predict --check --row`, `predict --json` and `sweep --json` files."""
import contextlib
import importlib.util
import io
import json
import os
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "accuracy-bracket.py")
spec = importlib.util.spec_from_file_location("accuracy_bracket", SCRIPT)
bracket = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bracket)


class Verdict(unittest.TestCase):
    def test_the_bracketed_prediction_is_the_geometric_mean(self):
        self.assertAlmostEqual(bracket.bracketed(1.0, 4.0), 2.0)
        self.assertEqual(bracket.bracketed(1.5, None), 1.5)

    def test_within_twenty_percent_of_the_bracketed_prediction_holds(self):
        # sqrt(1.0 × 2.0) = 1.414: 1.19 is -16% of it.
        self.assertEqual(bracket.verdict(1.19, 1.0, 1.4, 1.0, 2.0), "holds")
        # +30% of the prediction before, +19% of the bracket (sqrt(1.0 × 1.2) = 1.095).
        self.assertEqual(bracket.verdict(1.3, 1.25, 1.35, 1.0, 1.2), "holds")
        # No prediction after: the prediction before alone.
        self.assertEqual(bracket.verdict(0.81, 0.7, 0.9, 1.0, None), "holds")

    def test_within_twenty_percent_of_the_prediction_before_alone_is_not_enough(self):
        # -15% of the prediction before, -31% of the bracket (1.22): only the noise covers it.
        self.assertEqual(bracket.verdict(0.85, 0.8, 0.9, 1.0, 1.5), "holds within the noise")

    def test_a_miss_the_intervals_cover_holds_within_the_noise(self):
        # 1.5 is +50% of 1.0, but the prediction after (1.3) × 1.2 = 1.56 reaches it.
        self.assertEqual(bracket.verdict(1.5, 1.45, 1.55, 1.0, 1.3), "holds within the noise")
        # No prediction after: the measured interval's low end (1.15) within 1.2 × 1.0.
        self.assertEqual(bracket.verdict(1.3, 1.15, 1.4, 1.0, None), "holds within the noise")

    def test_outside_both_bands_misses(self):
        self.assertEqual(bracket.verdict(2.0, 1.9, 2.1, 1.0, 1.3), "misses")
        self.assertEqual(bracket.verdict(0.5, 0.45, 0.55, 1.0, 0.9), "misses")


class Files(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.directory.cleanup()

    def write(self, name, content):
        path = os.path.join(self.directory.name, name)
        with open(path, "w") as file:
            file.write(content if isinstance(content, str) else json.dumps(content))
        return path

    def output(self, function, *arguments):
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            function(*arguments)
        return buffer.getvalue().splitlines()

    def test_row_cells_added_to_header_separator_and_row(self):
        row = self.write("row.md", "| scenario | variant | machine |\n| --- | --- | --- |\n| fp32_ops | x | quiet |\n")
        check = self.write("check.json", {"check": {"decode_slowdown": {
            "measured": 1.5, "predicted": 1.0, "measured_low": 1.45, "measured_high": 1.55}}})
        after = self.write("after.json", {"decode_slowdown": 1.3})
        lines = self.output(bracket.row, row, check, after)
        self.assertEqual(lines[0], "| scenario | variant | machine | decode_slowdown predicted with the roofs after "
                                   "| bracketed | verdict |")
        self.assertEqual(lines[1], "| --- | --- | --- | ---: | ---: | --- |")
        # sqrt(1.0 × 1.3) = 1.14: +32%.
        self.assertEqual(lines[2], "| fp32_ops | x | quiet | 1.30x (+15%) | 1.14x (+32%) | holds within the noise |")
        lines = self.output(bracket.row, row, check)
        self.assertEqual(lines[2], "| fp32_ops | x | quiet | - | - | misses |")

    def test_sweep_points_matched_to_the_prediction_after(self):
        interval = {"median": 100.0, "low": 95.0, "high": 105.0, "relative_ci": 0.05, "noisy": False}
        sweep = self.write("sweep.json", [
            {"swept": {"batch_size": 1}, "intervals": {"decode_tokens_per_s": interval},
             "predicted_decode_tokens_per_s": 150.0, "decode_tokens_per_s_prediction_error": 100 / 150 - 1,
             "prediction": {"decode_bound": "bandwidth roof"}},
            {"swept": {"batch_size": 2}, "intervals": {"decode_tokens_per_s": interval},
             "prediction": {"unavailable": "no roofs"}}])
        after = self.write("after.json", [{"point": "batch_size=1", "prediction": {"decode_tokens_per_s": 110.0}},
                                          {"point": "batch_size=2", "prediction": {"decode_tokens_per_s": 120.0}}])
        lines = self.output(bracket.sweep, "decode-batch", sweep, after)
        # sqrt(150 × 110) = 128.5: -22%, the interval's high end (105) within 110 × 0.8 = 88.
        self.assertEqual(lines[0], "| decode-batch | batch_size 1 | 100.0 ±5.0% | 150.0 | -33% | bandwidth roof "
                                   "| 110.0 (-9%) | 128.5 (-22%) | holds within the noise |")
        self.assertEqual(lines[1], "| decode-batch | batch_size 2 | 100.0 ±5.0% | - | - | no roofs | - | - | - |")
        # A prediction of another point is not taken as this one's.
        wrong = self.write("wrong.json", [{"point": "batch_size=4", "prediction": {"decode_tokens_per_s": 110.0}}])
        self.assertTrue(self.output(bracket.sweep, "decode-batch", sweep, wrong)[0].endswith("| - | - | misses |"))

    def test_summary_counts_each_table_on_its_own(self):
        table = self.write("table.md", "\n".join([
            "| scenario | variant | decode_slowdown predicted with the roofs after | bracketed | verdict |",
            "| --- | --- | ---: | ---: | --- |",
            "| fp32_ops | as shipped | 1.30x (+15%) | 1.14x (+3%) | holds |",
            "| host_sync | as shipped | 1.30x (+15%) | 1.14x (+3%) | holds |",
            "| no_kv_cache | lab-tiny | 1.30x (+35%) | 1.14x (+31%) | holds within the noise |",
            "",
            "| sweep | point | decode tok/s measured | predicted with the roofs after | bracketed | verdict |",
            "| --- | --- | ---: | ---: | ---: | --- |",
            "| decode-batch | batch_size 1 | 100.0 | 110.0 (-9%) | 128.5 (-22%) | misses |",
            "| decode-batch | batch_size 2 | 100.0 | - | - | - |"]))
        self.assertEqual(self.output(bracket.summary, table), [
            "**2 of 3 rows within 20% of the bracketed prediction, 1 within the noise, 0 missed; "
            "0 of 1 sweep points within 20% of the bracketed prediction, 0 within the noise, 1 missed.**"])


if __name__ == "__main__":
    unittest.main()
