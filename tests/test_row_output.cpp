// Rows as `-o csv|json|jsonl`: generic over the rows' JSON objects, so a field a row gains
// is printed without an edit; csv flattens objects to dotted columns and is read back by
// the project's RFC 4180 reader (profiling/trace/csv_table.h), quoting included.
#include <catch2/catch.hpp>

#include <sstream>

#include "lab/report/row_output.h"
#include "profiling/trace/csv_table.h"

using namespace decodelab;

namespace {

std::vector<nlohmann::json> two_rows() {
  return {{{"bug", "host_sync"},
           {"metrics", {{"decode_tokens_per_s", 812.5}, {"ttft_ms", 3}}},
           {"note", "one, \"two\"\nthree"},
           {"outputs", {{1, 2}, {3, 4}}},
           {"ids", {5, 6, 7}}},
          {{"bug", "fp32_ops"}, {"metrics", {{"decode_tokens_per_s", 90.0}, {"new_figure", true}}}}};
}

}  // namespace

TEST_CASE("row output: csv flattens objects, joins scalar lists, leaves nested lists to json", "[row_output]") {
  // run
  const std::string csv = format_rows(two_rows(), RowFormat::Csv);
  std::vector<CsvRecord> records = parse_csv(csv, "rows.csv");
  std::erase_if(records, [](const CsvRecord& record) { return record.blank(); });
  // verify: one header of every column any row has, in first-seen order (a JSON object's
  // keys in its own order); one record per row, empty where a row lacks the column
  REQUIRE(records.size() == 3);
  CHECK(records[0].fields == std::vector<std::string>{"bug", "ids", "metrics.decode_tokens_per_s", "metrics.ttft_ms",
                                                      "note", "metrics.new_figure"});
  CHECK(records[1].fields ==
        std::vector<std::string>{"host_sync", "5 6 7", "812.5", "3", "one, \"two\"\nthree", ""});
  CHECK(records[2].fields == std::vector<std::string>{"fp32_ops", "", "90", "", "", "true"});
  CHECK(csv.find("outputs") == std::string::npos);
}

TEST_CASE("row output: json is the list of rows, jsonl one row per line", "[row_output]") {
  const std::vector<nlohmann::json> rows = two_rows();
  CHECK(nlohmann::json::parse(format_rows(rows, RowFormat::Json)) == nlohmann::json(rows));
  std::istringstream lines(format_rows(rows, RowFormat::Jsonl));
  std::string line;
  std::vector<nlohmann::json> read;
  while (std::getline(lines, line)) read.push_back(nlohmann::json::parse(line));
  CHECK(read == rows);
  CHECK(format_rows({}, RowFormat::Jsonl).empty());
  CHECK(nlohmann::json::parse(format_rows({}, RowFormat::Json)) == nlohmann::json::array());
}

TEST_CASE("row output: -o names", "[row_output]") {
  for (const std::string& name : row_format_names()) CHECK(row_format_name(parse_row_format(name)) == name);
  CHECK(parse_row_format("md") == RowFormat::Markdown);
  CHECK_THROWS(format_rows({}, RowFormat::Markdown));  // the command's own table
}
