// Reading a trace file's text: plain, or gzip inflated through zlib's streaming API.
#include "profiling/trace/trace_text.h"

#include <zlib.h>

#include <fstream>
#include <sstream>

#include "engine/base/errors.h"
#include "engine/base/json_errors.h"

namespace decodelab {

namespace {

bool gzip_magic(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f && static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gunzip(const std::string& compressed, const std::string& file) {
  if (compressed.size() > 0xffffffffu) throw InputError(file, 0, "", "a gzip file over 4 GB is not supported");
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) throw InputError(file, 0, "", "cannot start a gzip decoder");
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  std::string text;
  char buffer[1 << 16];
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof buffer;
    status = inflate(&stream, Z_NO_FLUSH);
    if (status != Z_OK && status != Z_STREAM_END) {
      const std::string reason = stream.msg ? stream.msg : "truncated or corrupt data";
      inflateEnd(&stream);
      throw InputError(file, 0, "", "not a valid gzip file: " + reason);
    }
    text.append(buffer, sizeof buffer - stream.avail_out);
    if (status == Z_OK && stream.avail_in == 0 && stream.avail_out != 0) {
      inflateEnd(&stream);
      throw InputError(file, 0, "", "not a valid gzip file: the compressed data ends early");
    }
  }
  inflateEnd(&stream);
  return text;
}

}  // namespace

std::string read_trace_text(const std::filesystem::path& file) {
  std::ifstream stream(file, std::ios::binary);
  if (!stream) throw InputError(file.string(), 0, "", "cannot read the trace file");
  std::stringstream bytes;
  bytes << stream.rdbuf();
  std::string text = bytes.str();
  return gzip_magic(text) ? gunzip(text, file.string()) : text;
}

nlohmann::json parse_trace_json(std::string_view text, const std::string& file_name) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    throw InputError(file_name, json_error_line(error, text), "", json_parse_problem(error, text.size()));
  }
}

}  // namespace decodelab
