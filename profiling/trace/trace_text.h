// The text of a trace file and its JSON, shared by every trace reader: gzip-compressed files
// (torch.profiler's export and tensorboard_trace_handler write .json.gz) are inflated with
// zlib, told by their magic bytes rather than their name.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace decodelab {

// Throws InputError when the file cannot be read or its gzip stream is corrupt.
std::string read_trace_text(const std::filesystem::path& file);
// A syntax error throws InputError naming the file and the line.
nlohmann::json parse_trace_json(std::string_view text, const std::string& file_name);

}  // namespace decodelab
