// The lesson of each bug, as its bugs/<bug>.cpp opens (STYLE.md: what real code does, what
// a profiler shows, the fix): quoted by the reports from that one place. The build copies
// each file's opening comment into the binary (cmake/bug_lessons.cmake), so an installed
// decodelab has them too.
#pragma once

#include <string>
#include <vector>

#include "bugs/bug_set.h"

namespace decodelab {

struct BugLesson {
  std::string bug;    // "host_sync": the file's name, the scenario key
  std::string title;  // "host syncs in the decode loop" (the "Bug:" line)
  // The lesson's parts in order, each a lead ("What real code does") and its text; the
  // text before the first lead, if any, has an empty lead.
  std::vector<std::pair<std::string, std::string>> parts;
};

// Every bug file's lesson, in the order of the bug files' names.
const std::vector<BugLesson>& bug_lessons();

// The lessons of the bugs `bugs` switches on, in BugSet order (none for a set without bugs).
std::vector<const BugLesson*> lessons_of(const BugSet& bugs);

// A lesson read from the text of a bug file's opening comment, "// " taken off each line.
BugLesson parse_bug_lesson(const std::string& bug, const std::string& text);

}  // namespace decodelab
