#!/usr/bin/env bash
# ctest `repository_rules`: what the project's machines allow, checked on the tracked files.
#   - Debian's packages and PyPI are the only registries: no package.json or package-lock.json,
#     no node_modules, and no script or CMake file that calls npm, npx or node.
#   - CI never turns a failed install into skipped tests: no line of .ci/run that runs
#     scripts/setup.sh goes on after a failure (`|| echo`, `|| true`, `|| :`).
set -uo pipefail
repo="${1:?usage: repository-rules.sh SOURCE_DIR}"
cd "$repo" || exit 2
failures=0
fail() { echo "repository rules: FAIL: $*"; failures=$((failures + 1)); }

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files)
else
  mapfile -t files < <(find . -type f -not -path './build*' -not -path './.git/*' | sed 's|^\./||')
fi
for file in "${files[@]}"; do
  [[ -e "$file" ]] || continue  # deleted in the work tree, not yet committed
  case "$file" in
    package.json|*/package.json|package-lock.json|*/package-lock.json|node_modules/*|*/node_modules/*)
      fail "$file: npm's files have no place here (the project's registries are Debian's and PyPI)" ;;
  esac
  case "$file" in
    tests/repository-rules.sh) continue ;;
    *.sh|*.cmake|*CMakeLists.txt|.ci/*)
      # A command position: start of line, after ; && || | ( or $( — then npm, npx or node.
      if grep -nE '(^|[;&|(]|\$\()[[:space:]]*(sudo[[:space:]]+)?(npm|npx|node)([[:space:]]|$)' "$file" >/dev/null 2>&1; then
        fail "$file:$(grep -nE '(^|[;&|(]|\$\()[[:space:]]*(sudo[[:space:]]+)?(npm|npx|node)([[:space:]]|$)' "$file" | head -1 | cut -d: -f1): calls npm, npx or node"
      fi ;;
  esac
done
while IFS= read -r line; do
  fail ".ci/run: an install whose failure is ignored: $line"
done < <(grep -nE 'setup\.sh.*\|\|' .ci/run | grep -vE '^\s*[0-9]+:\s*#')

# Catch2 test names that ctest cannot pass back: catch_discover_tests splits a name at ';'
# into two entries that match nothing, and a name starting with '-' reads as an option.
while IFS= read -r line; do
  fail "$line: a test case name with ';' or starting with '-' (ctest cannot run it by name)"
done < <(grep -nE 'TEST_CASE\("(-|[^"]*;)' tests/*.cpp | cut -d: -f1,2)

if ((failures > 0)); then exit 1; fi
echo "repository rules: ok (${#files[@]} files: no npm, no ignored install in .ci/run, test names ctest can run)"
