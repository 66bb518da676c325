// The CSV splitter under the Nsight readers: quoting as RFC 4180 has it, the line each
// record starts on (so errors can name it), the tools' chatter skipped, and a quote left
// open by a truncated file reported at the line where it opened.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "engine/base/errors.h"
#include "profiling/trace/csv_table.h"

using namespace decodelab;

using Fields = std::vector<std::string>;

TEST_CASE("csv: quoted fields keep commas, doubled quotes and line breaks", "[csv_table]") {
  const std::string text =
      "\"ID\",\"Kernel Name\",Value\n"
      "0,\"void k<int, float>(\"\"x\"\")\",1\n"
      "1,\"two\nlines\",2\n"
      "2,plain,3\n";

  const std::vector<CsvRecord> records = parse_csv(text, "k.csv");

  REQUIRE(records.size() == 4);
  CHECK(records[0].fields == Fields{"ID", "Kernel Name", "Value"});
  CHECK(records[1].fields == Fields{"0", "void k<int, float>(\"x\")", "1"});
  CHECK(records[2].fields == Fields{"1", "two\nlines", "2"});
  CHECK(records[3].fields == Fields{"2", "plain", "3"});
  // Each record knows the line it starts on, counting the line break inside record 2.
  CHECK(records[1].line == 2);
  CHECK(records[2].line == 3);
  CHECK(records[3].line == 5);
}

TEST_CASE("csv: CRLF, a byte order mark, empty cells and blank lines", "[csv_table]") {
  const std::string text = "\xEF\xBB\xBF" "a,b,c\r\n,,\r\n\r\nx,\"\",z";

  const std::vector<CsvRecord> records = parse_csv(text, "crlf.csv");

  REQUIRE(records.size() == 4);
  CHECK(records[0].fields == Fields{"a", "b", "c"});
  CHECK(records[1].fields == Fields{"", "", ""});
  CHECK_FALSE(records[1].blank());
  CHECK(records[2].blank());
  CHECK(records[3].fields == Fields{"x", "", "z"});  // no final line break
  CHECK(records[3].line == 4);
}

TEST_CASE("csv: skipped lines keep the line count of the rest", "[csv_table]") {
  const std::string text = "==PROF== Connected to process 1 (app)\nID,Name\n==PROF== Disconnected\n0,k\n";

  const std::vector<CsvRecord> records =
      parse_csv(text, "p.csv", [](std::string_view line) { return line.substr(0, 2) == "=="; });

  REQUIRE(records.size() == 2);
  CHECK(records[0].line == 2);
  CHECK(records[1].fields == Fields{"0", "k"});
  CHECK(records[1].line == 4);
}

TEST_CASE("csv: a quote left open names the file and the line it opened on", "[csv_table]") {
  const std::string text = "ID,Name\n0,ok\n1,\"cut off here\n2,more\n";

  try {
    parse_csv(text, "cut.csv");
    FAIL("expected an InputError");
  } catch (const InputError& error) {
    CHECK(error.file() == "cut.csv");
    CHECK(error.line() == 3);
    CHECK(error.key() == "column 2");
    CHECK_THAT(error.problem(), Catch::Matchers::Contains("never closed"));
  }
}
