// Bug lessons from the bug files' opening comments (see bug_lessons.h). A part starts at a
// line that opens with a capitalised lead ending in ": " within its first few words ("What
// a profiler sees: ...", "The fix: ..."); every other line continues the part before it.
#include "lab/bug_lessons.h"

#include <cctype>
#include <sstream>
#include <utility>

namespace decodelab {

namespace {

struct LessonText {
  const char* bug;
  const char* text;
};

const LessonText kLessonTexts[] = {
#include "bug_lessons.inc"
};

// "What real code does" from "What real code does: runs a model ...", or "" when the line
// continues a part.
std::string lead_of(const std::string& line) {
  if (line.empty() || !std::isupper(static_cast<unsigned char>(line[0]))) return "";
  const size_t colon = line.find(": ");
  if (colon == std::string::npos || colon > 32) return "";
  const std::string lead = line.substr(0, colon);
  for (char c : lead) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != ' ' && c != '-') return "";
  }
  return lead;
}

}  // namespace

BugLesson parse_bug_lesson(const std::string& bug, const std::string& text) {
  BugLesson lesson;
  lesson.bug = bug;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const std::string lead = lead_of(line);
    if (lead == "Bug") {
      lesson.title = line.substr(5);
      if (!lesson.title.empty() && lesson.title.back() == '.') lesson.title.pop_back();
    } else if (!lead.empty()) {
      lesson.parts.emplace_back(lead, line.substr(lead.size() + 2));
    } else if (lesson.parts.empty()) {
      lesson.parts.emplace_back("", line);
    } else {
      lesson.parts.back().second += " " + line;
    }
  }
  return lesson;
}

const std::vector<BugLesson>& bug_lessons() {
  static const std::vector<BugLesson> lessons = [] {
    std::vector<BugLesson> parsed;
    for (const LessonText& entry : kLessonTexts) parsed.push_back(parse_bug_lesson(entry.bug, entry.text));
    return parsed;
  }();
  return lessons;
}

std::vector<const BugLesson*> lessons_of(const BugSet& bugs) {
  const std::pair<bool, const char*> switched[] = {{bugs.no_kv_cache, "no_kv_cache"},
                                                   {bugs.non_contiguous, "non_contiguous"},
                                                   {bugs.host_sync, "host_sync"},
                                                   {bugs.fp32_ops, "fp32_ops"},
                                                   {bugs.sequential_generation, "sequential_generation"}};
  std::vector<const BugLesson*> result;
  for (const auto& [on, name] : switched) {
    if (!on) continue;
    for (const BugLesson& lesson : bug_lessons()) {
      if (lesson.bug == name) result.push_back(&lesson);
    }
  }
  return result;
}

}  // namespace decodelab
