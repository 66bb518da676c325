// Streaming a torch.profiler trace: an inflating stream buffer (zlib; plain files pass
// through) that counts lines for error messages, and a SAX handler that follows the JSON
// path (traceEvents[i].args."Input Dims"[j]...) with a small frame stack and hands each
// complete event to TorchTraceBuilder.
#include "profiling/trace/torch_trace_stream.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <istream>
#include <streambuf>

#include "engine/base/errors.h"
#include "engine/base/json_errors.h"

namespace decodelab {

namespace {

// The file's bytes, inflated when they start with gzip's magic, with the line of the read
// position on demand.
class InflatingBuffer : public std::streambuf {
 public:
  InflatingBuffer(const std::filesystem::path& file, std::string name) : name_(std::move(name)) {
    in_.open(file, std::ios::binary);
    if (!in_) throw InputError(name_, 0, "", "cannot read the trace file");
    const int first = in_.get(), second = in_.get();
    gzip_ = first == 0x1f && second == 0x8b;
    in_.clear();
    in_.seekg(0);
    if (gzip_ && inflateInit2(&stream_, 16 + MAX_WBITS) != Z_OK) throw InputError(name_, 0, "", "cannot start a gzip decoder");
  }
  ~InflatingBuffer() override {
    if (gzip_) inflateEnd(&stream_);
  }
  InflatingBuffer(const InflatingBuffer&) = delete;
  InflatingBuffer& operator=(const InflatingBuffer&) = delete;

  int line() const { return lines_before_ + static_cast<int>(std::count(eback(), gptr(), '\n')) + 1; }
  int64_t delivered() const { return delivered_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    lines_before_ += static_cast<int>(std::count(eback(), egptr(), '\n'));
    const size_t size = gzip_ ? inflate_some() : read_some(out_, sizeof out_);
    setg(out_, out_, out_ + size);
    delivered_ += static_cast<int64_t>(size);
    return size == 0 ? traits_type::eof() : traits_type::to_int_type(*gptr());
  }

 private:
  size_t read_some(char* into, size_t capacity) {
    in_.read(into, static_cast<std::streamsize>(capacity));
    return static_cast<size_t>(in_.gcount());
  }

  size_t inflate_some() {
    while (!ended_) {
      if (stream_.avail_in == 0) {
        stream_.avail_in = static_cast<uInt>(read_some(in_buffer_, sizeof in_buffer_));
        stream_.next_in = reinterpret_cast<Bytef*>(in_buffer_);
        if (stream_.avail_in == 0) throw InputError(name_, 0, "", "not a valid gzip file: the compressed data ends early");
      }
      stream_.next_out = reinterpret_cast<Bytef*>(out_);
      stream_.avail_out = sizeof out_;
      const int status = inflate(&stream_, Z_NO_FLUSH);
      if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR) {
        throw InputError(name_, 0, "", std::string("not a valid gzip file: ") + (stream_.msg ? stream_.msg : "corrupt data"));
      }
      ended_ = status == Z_STREAM_END;
      const size_t produced = sizeof out_ - stream_.avail_out;
      if (produced > 0) return produced;
    }
    return 0;
  }

  std::string name_;
  std::ifstream in_;
  bool gzip_ = false, ended_ = false;
  z_stream stream_{};
  char in_buffer_[1 << 16];
  char out_[1 << 18];
  int lines_before_ = 0;
  int64_t delivered_ = 0;
};

// One event as the SAX pass collects it, checked when its object closes.
struct PendingEvent {
  enum class Number { Missing, Valid, Invalid };
  size_t index = 0;
  std::string ph, name, cat, pid, tid;
  bool ph_string = false, has_ph = false, name_string = false, has_name = false, has_cat = false, cat_string = false;
  Number ts = Number::Missing, dur = Number::Missing;
  double ts_value = 0, dur_value = 0;
  bool has_args = false, args_object = false;
  int64_t correlation = -1, bytes = -1;
  bool has_dims = false, dims_list = false, has_strides = false;
  std::vector<std::vector<int64_t>> dims, strides;
  std::vector<char> dims_flat, strides_flat;
  std::vector<std::string> types;

  void reset(size_t at) {
    index = at;
    ph.clear(), name.clear(), cat.clear(), pid.clear(), tid.clear();
    ph_string = has_ph = name_string = has_name = has_cat = cat_string = false;
    ts = dur = Number::Missing;
    has_args = args_object = false;
    correlation = bytes = -1;
    has_dims = dims_list = has_strides = false;
    dims.clear(), strides.clear(), dims_flat.clear(), strides_flat.clear(), types.clear();
  }
};

class TraceHandler : public nlohmann::json_sax<nlohmann::json> {
 public:
  TraceHandler(const InflatingBuffer& buffer, std::string file) : buffer_(buffer), file_(file), builder_(std::move(file)) {}

  bool null() override { return scalar(Scalar{}); }
  bool boolean(bool) override { return scalar(Scalar{}); }
  bool number_integer(number_integer_t value) override {
    return scalar(Scalar{Scalar::Integer, value, static_cast<double>(value), nullptr});
  }
  bool number_unsigned(number_unsigned_t value) override {
    const bool fits = value <= static_cast<number_unsigned_t>(INT64_MAX);
    return scalar(Scalar{fits ? Scalar::Integer : Scalar::Float, fits ? static_cast<int64_t>(value) : 0,
                         static_cast<double>(value), nullptr});
  }
  bool number_float(number_float_t value, const string_t&) override {
    return scalar(Scalar{Scalar::Float, 0, value, nullptr});
  }
  bool string(string_t& value) override { return scalar(Scalar{Scalar::String, 0, 0, &value}); }
  bool binary(binary_t&) override { return scalar(Scalar{}); }
  bool start_object(std::size_t) override { return open(true); }
  bool start_array(std::size_t) override { return open(false); }
  bool key(string_t& key) override {
    frames_.back().key = key;
    return true;
  }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& error) override {
    const auto* parse = dynamic_cast<const nlohmann::json::parse_error*>(&error);
    throw InputError(file_, buffer_.line(), "",
                     json_parse_problem(error, parse ? static_cast<size_t>(buffer_.delivered()) : 0));
  }

  std::optional<TorchTrace> result() {
    if (!builder_.looks_like_torch() || schema_ == "decodelab-trace") return std::nullopt;
    if (!events_found_) throw InputError(file_, 0, "traceEvents", "missing: expected a torch.profiler Chrome trace");
    if (error_) throw *error_;
    TorchTrace trace = builder_.finish();
    trace.strides = strides_ && trace.shapes;
    return trace;
  }

 private:
  enum class Role { Root, Events, Event, Args, Dims, Types, Strides, DimsItem, StridesItem, Devices, Device, OtherData, Skip };
  struct Frame {
    Role role;
    bool object;
    std::string key;
    size_t count = 0;  // elements so far (arrays)
  };
  struct Scalar {
    enum Kind { Other, Integer, Float, String } kind = Other;
    int64_t integer = 0;
    double number = 0;
    const std::string* text = nullptr;
  };

  void fail(const std::string& key, const std::string& problem) {
    if (!error_) error_ = InputError(file_, buffer_.line(), key, problem);
  }
  std::string event_path(size_t index) const { return events_path_ + "[" + std::to_string(index) + "]"; }

  // The role of a value about to be read in the current frame (and count it there).
  Role child_role(bool container, bool object) {
    if (frames_.empty()) {
      if (!container) return Role::Skip;
      if (!object) events_found_ = true, events_path_.clear();
      return object ? Role::Root : Role::Events;
    }
    Frame& frame = frames_.back();
    const size_t index = frame.count++;
    switch (frame.role) {
      case Role::Root:
        if (frame.key == "traceEvents") {
          events_found_ = true;
          if (container && !object) return Role::Events;
          fail("traceEvents", "expected a list of events");
          return Role::Skip;
        }
        if (frame.key == "deviceProperties" && container && !object) return Role::Devices;
        if (frame.key == "otherData" && container && object) return Role::OtherData;
        return Role::Skip;
      case Role::Events:
        if (container && object) {
          pending_.reset(index);
          return Role::Event;
        }
        fail(event_path(index), "expected an event object");
        return Role::Skip;
      case Role::Event:
        if (frame.key == "args") {
          pending_.has_args = true;
          pending_.args_object = container && object;
          return pending_.args_object ? Role::Args : Role::Skip;
        }
        return Role::Skip;
      case Role::Args:
        if (frame.key == "Input Dims") {
          pending_.has_dims = true;
          pending_.dims_list = container && !object;
          return pending_.dims_list ? Role::Dims : Role::Skip;
        }
        if (frame.key == "Input type" && container && !object) return Role::Types;
        if (frame.key == "Input Strides" && container && !object) {
          pending_.has_strides = strides_ = true;
          return Role::Strides;
        }
        return Role::Skip;
      case Role::Dims:
      case Role::Strides: {
        const bool dims = frame.role == Role::Dims;
        (dims ? pending_.dims : pending_.strides).emplace_back();
        (dims ? pending_.dims_flat : pending_.strides_flat).push_back(container && !object);
        return container && !object ? (dims ? Role::DimsItem : Role::StridesItem) : Role::Skip;
      }
      case Role::DimsItem:
      case Role::StridesItem:
        (frame.role == Role::DimsItem ? pending_.dims_flat : pending_.strides_flat).back() = false;  // a TensorList
        return Role::Skip;
      case Role::Types:
        pending_.types.emplace_back();
        return Role::Skip;
      case Role::Devices: return index == 0 && container && object ? Role::Device : Role::Skip;
      default: return Role::Skip;
    }
  }

  bool open(bool object) {
    if (!frames_.empty() && frames_.back().role == Role::Skip) {
      ++frames_.back().count;  // depth inside a skipped value
      return true;
    }
    frames_.push_back(Frame{child_role(true, object), object, {}, 0});
    return true;
  }

  bool close() {
    Frame& frame = frames_.back();
    if (frame.role == Role::Skip && frame.count > 0) {
      --frame.count;
      return true;
    }
    const Role role = frame.role;
    frames_.pop_back();
    if (role == Role::Event) finish_event();
    return true;
  }

  bool scalar(const Scalar& value) {
    if (frames_.empty() || frames_.back().role == Role::Skip) return true;
    Frame& frame = frames_.back();
    ++frame.count;
    const bool is_string = value.kind == Scalar::String;
    const bool is_number = value.kind == Scalar::Integer || value.kind == Scalar::Float;
    switch (frame.role) {
      case Role::Event: {
        const std::string& key = frame.key;
        PendingEvent& e = pending_;
        if (key == "ph") e.has_ph = true, e.ph_string = is_string, e.ph = is_string ? *value.text : "";
        else if (key == "name") e.has_name = true, e.name_string = is_string, e.name = is_string ? *value.text : "";
        else if (key == "cat") e.has_cat = true, e.cat_string = is_string, e.cat = is_string ? *value.text : "";
        else if (key == "ts") e.ts = is_number && std::isfinite(value.number) ? PendingEvent::Number::Valid : PendingEvent::Number::Invalid, e.ts_value = value.number;
        else if (key == "dur") e.dur = is_number && std::isfinite(value.number) ? PendingEvent::Number::Valid : PendingEvent::Number::Invalid, e.dur_value = value.number;
        else if (key == "pid" || key == "tid") (key == "pid" ? e.pid : e.tid) = id_text(value);
        else if (key == "args") e.has_args = true, e.args_object = false;
        break;
      }
      case Role::Args:
        if (frame.key == "correlation" && value.kind == Scalar::Integer) pending_.correlation = value.integer;
        else if (frame.key == "bytes" && value.kind == Scalar::Integer) pending_.bytes = value.integer;
        else if (frame.key == "Input Dims") pending_.has_dims = true, pending_.dims_list = false;
        break;
      case Role::Dims:
      case Role::Strides: {
        const bool dims = frame.role == Role::Dims;
        (dims ? pending_.dims : pending_.strides).emplace_back();
        (dims ? pending_.dims_flat : pending_.strides_flat).push_back(false);
        break;
      }
      case Role::DimsItem:
      case Role::StridesItem:
        if (value.kind == Scalar::Integer) {
          (frame.role == Role::DimsItem ? pending_.dims : pending_.strides).back().push_back(value.integer);
        } else {
          (frame.role == Role::DimsItem ? pending_.dims_flat : pending_.strides_flat).back() = false;
        }
        break;
      case Role::Types: pending_.types.push_back(is_string ? *value.text : std::string()); break;
      case Role::Device:
        if (frame.key == "name" && is_string) builder_.set_device(*value.text);
        break;
      case Role::OtherData:
        if (frame.key == "schema" && is_string) schema_ = *value.text;
        break;
      case Role::Root:
        if (frame.key == "traceEvents") events_found_ = true, fail("traceEvents", "expected a list of events");
        break;
      case Role::Events: fail(event_path(frame.count - 1), "expected an event object"); break;
      default: break;
    }
    return true;
  }

  static std::string id_text(const Scalar& value) {
    if (value.kind == Scalar::String) return *value.text;
    if (value.kind == Scalar::Integer) return std::to_string(value.integer);
    if (value.kind == Scalar::Float) return nlohmann::json(value.number).dump();
    return "null";
  }

  void finish_event() {
    PendingEvent& e = pending_;
    const std::string path = event_path(e.index);
    if (!e.has_ph || !e.ph_string) return fail(path + ".ph", "expected a phase string");
    if (e.ph != "X") {
      if (e.name_string) builder_.saw_name(e.name, e.pid);
      return;
    }
    if (!e.has_name || !e.name_string) return fail(path + ".name", "expected a string");
    builder_.saw_name(e.name, e.pid);
    if (e.has_cat && !e.cat_string) return fail(path + ".cat", "expected a string");
    TorchEvent event;
    event.name = std::move(e.name);
    const std::string* category = e.has_cat ? &e.cat : nullptr;
    if (!TorchTraceBuilder::kept(category)) return builder_.add(std::move(event), category, "");
    for (const auto& [state, key] : {std::pair{e.ts, ".ts"}, std::pair{e.dur, ".dur"}}) {
      if (state == PendingEvent::Number::Missing) return fail(path + key, "missing");
      if (state == PendingEvent::Number::Invalid) return fail(path + key, "expected a number");
    }
    if (e.dur_value < 0) return fail(path + ".dur", "expected a duration >= 0");
    if (e.has_args && !e.args_object) return fail(path + ".args", "expected an object");
    if (e.has_dims && !e.dims_list) return fail(path + ".args.Input Dims", "expected a list");
    event.begin_ns = std::llround(e.ts_value * 1000.0);
    event.end_ns = std::llround((e.ts_value + e.dur_value) * 1000.0);
    event.correlation = e.correlation;
    event.bytes = e.bytes;
    for (size_t i = 0; i < e.dims.size(); ++i) {  // as parse_torch_trace's Reader::inputs
      TorchInput input;
      if (i < e.types.size()) input.type = e.types[i];
      if (e.dims_flat[i]) {
        input.dims = std::move(e.dims[i]);
      } else {
        input.type = input.type.empty() ? "list" : input.type;
        if (input.is_tensor()) input.type = "TensorList";
      }
      if (i < e.strides.size() && e.strides_flat[i]) input.strides = std::move(e.strides[i]);
      event.inputs.push_back(std::move(input));
    }
    builder_.add(std::move(event), category, e.pid + "/" + e.tid);
  }

  const InflatingBuffer& buffer_;
  std::string file_;
  TorchTraceBuilder builder_;
  std::vector<Frame> frames_;
  PendingEvent pending_;
  std::string events_path_ = "traceEvents";
  std::string schema_;
  bool events_found_ = false, strides_ = false;
  std::optional<InputError> error_;
};

}  // namespace

std::optional<TorchTrace> stream_torch_trace(const std::filesystem::path& file) {
  const std::string name = file.string();
  InflatingBuffer buffer(file, name);
  std::istream stream(&buffer);
  TraceHandler handler(buffer, name);
  try {
    nlohmann::json::sax_parse(stream, &handler);
  } catch (const nlohmann::json::exception& error) {  // out_of_range numbers, thrown by the lexer
    throw InputError(name, buffer.line(), "", json_parse_problem(error, static_cast<size_t>(buffer.delivered())));
  }
  return handler.result();
}

}  // namespace decodelab
