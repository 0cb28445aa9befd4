// zstd compression for the Store's physical layer (lib/store/codec.ts). The zstd library is
// compiled into this addon from the C sources shipped in the zstd-napi package (CMakeLists.txt).
// Frames are written magicless, without checksum or dictionary id: the Store re-hashes every
// decoded object against its id, so those fields would only cost bytes. The decoded size stays in
// the frame header (a group's members are addressed inside it). A "prefix" is raw content the frame may refer to (a delta's base).
#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <map>
#include <vector>

#include "zstd_frame.h"

namespace layerfs {

ZSTD_CCtx* ThreadCctx() {
  static thread_local ZSTD_CCtx* c = ZSTD_createCCtx();
  return c;
}

ZSTD_DCtx* ThreadDctx() {
  static thread_local ZSTD_DCtx* d = ZSTD_createDCtx();
  return d;
}

size_t ConfigureFrame(ZSTD_CCtx* c, int level) {
  ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
  size_t r = ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
  if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, ZSTD_c_format, ZSTD_f_zstd1_magicless);
  if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 0);
  if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, ZSTD_c_dictIDFlag, 0);
  return ZSTD_isError(r) ? r : 0;
}

void ZstdCheck(const Napi::Env& env, size_t r, const char* what) {
  if (ZSTD_isError(r)) throw Napi::Error::New(env, std::string(what) + ": " + ZSTD_getErrorName(r));
}

Napi::Value CompressFrame(const Napi::Env& env, ZSTD_CCtx* c, const Bytes& src) {
  const size_t bound = ZSTD_compressBound(src.size);
  std::string out(bound, '\0');
  const size_t n = ZSTD_compress2(c, out.data(), bound, src.data, src.size);
  ZstdCheck(env, n, "zstd compress");
  return Napi::Buffer<uint8_t>::Copy(env, reinterpret_cast<const uint8_t*>(out.data()), n);
}

constexpr size_t kMaxFrame = 64u << 20;

size_t DecodedSize(const Napi::Env& env, const Bytes& frame, const Napi::Value& want) {
  if (!want.IsNumber()) throw Napi::TypeError::New(env, "size must be a number");
  const double w = want.As<Napi::Number>().DoubleValue();
  if (w == -1) {
    ZSTD_frameHeader h;
    const size_t r = ZSTD_getFrameHeader_advanced(&h, frame.data, frame.size, ZSTD_f_zstd1_magicless);
    if (r != 0 || h.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN || h.frameContentSize > kMaxFrame) {
      throw Napi::Error::New(env, "zstd decompress: bad frame header");
    }
    return static_cast<size_t>(h.frameContentSize);
  }
  if (!(w >= 0 && w <= kMaxFrame)) throw Napi::RangeError::New(env, "size out of range");
  return static_cast<size_t>(w);
}

Napi::Value DecompressFrame(const Napi::Env& env, ZSTD_DCtx* d, const Bytes& frame, size_t size) {
  Napi::Buffer<uint8_t> out = Napi::Buffer<uint8_t>::New(env, size);
  // One spare byte of capacity would let an overlong frame be detected; a frame that decodes to
  // more than `size` fails with dstSize_tooSmall instead, which is just as good.
  const size_t n = ZSTD_decompressDCtx(d, out.Data(), size, frame.data, frame.size);
  ZstdCheck(env, n, "zstd decompress");
  if (n != size) throw Napi::Error::New(env, "zstd decompress: frame decodes to " + std::to_string(n) + " bytes, expected " + std::to_string(size));
  return out;
}

Napi::Value DecompressFrameInto(const Napi::Env& env, ZSTD_DCtx* d, const Bytes& frame, size_t size, const Napi::Value& out) {
  Bytes dst = GetBytes(env, out, "out");
  if (size > dst.size) return Napi::Number::New(env, static_cast<double>(size));
  const size_t n = ZSTD_decompressDCtx(d, const_cast<uint8_t*>(dst.data), size, frame.data, frame.size);
  ZstdCheck(env, n, "zstd decompress");
  if (n != size) throw Napi::Error::New(env, "zstd decompress: frame decodes to " + std::to_string(n) + " bytes, expected " + std::to_string(size));
  return Napi::Number::New(env, static_cast<double>(size));
}

namespace {

// Background compression: worker threads compress queued inputs in order, so the writer
// (lib/store/objects.ts) keeps storing while a sealed group compresses, and collects the frame
// when it writes the row. Jobs are identified by increasing numbers; a result is taken once.
// One thread serves a writer that keeps one job queued; more (up to one fewer than the machine's
// cores, at most kMaxThreads) start when more jobs wait than threads are idle, as a repack's batch
// queues all of its groups (lib/store/repack-rows.ts). One core is left to the writer: it feeds
// the threads and is what a commit waits on, and it compresses a queued job itself when it needs
// the result (Take), so a thread per core only took turns with it (docs/DECISIONS.md, "The
// compression threads leave the writer a core").
using SharedBytes = std::shared_ptr<const std::vector<uint8_t>>;

struct Job {
  std::vector<uint8_t> input;
  // A zstd dictionary to compress with (napi_zstd_dict.cc), or null; its key (CachedCDict) or empty.
  SharedBytes dict;
  std::string dict_key;
  // Raw content the frame may refer to (a delta's base), or null.
  SharedBytes prefix;
  int level = 3;
  std::string output;
  std::string error;
  bool done = false;
};

class Compressor {
 public:
  uint64_t Submit(const uint8_t* data, size_t size, int level, const Bytes* dict, const std::string& dict_key, const Bytes* prefix) {
    auto job = std::make_shared<Job>();
    job->input.assign(data, data + size);
    job->level = level;
    std::lock_guard<std::mutex> lock(mu_);
    // Consecutive jobs mostly share their dictionary (every content group) or their prefix (the
    // new chunks of a changed file against the same old chunks): the copy the last job made is
    // shared when the bytes are the same, instead of a fresh copy (and its page faults) per job.
    // A dictionary given with its key is the same as the last one when the keys are.
    if (dict && !dict_key.empty() && last_dict_ && last_dict_->size() == dict->size && dict_key == last_dict_key_) {
      job->dict = last_dict_;
    } else if (dict) {
      job->dict = Shared(last_dict_, *dict);
      last_dict_key_ = dict_key;
    }
    if (dict) job->dict_key = dict_key;
    if (prefix) job->prefix = Shared(last_prefix_, *prefix);
    const uint64_t id = ++next_;
    jobs_[id] = job;
    queue_.push_back(job);
    if (threads_.size() < MaxThreads() && queue_.size() > idle_) threads_.emplace_back([this] { Run(); });
    cv_.notify_one();
    return id;
  }

  // Job `id`'s frame; false if there is no such job. A job no thread has started yet is taken
  // off the queue and compressed by the caller (with its thread's context): the caller would only
  // wait while the threads work through the jobs queued before it, and on a busy machine they
  // may not be running at all.
  bool Take(uint64_t id, std::string* out, std::string* error) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto it = jobs_.find(id);
      if (it == jobs_.end()) return false;
      job = it->second;
      auto queued = std::find(queue_.begin(), queue_.end(), job);
      if (queued == queue_.end()) {
        // Running on a thread: meanwhile the caller compresses the jobs queued behind it, which
        // it would otherwise wait for next.
        while (!job->done && !queue_.empty()) {
          std::shared_ptr<Job> next = queue_.front();
          queue_.pop_front();
          lock.unlock();
          std::string frame;
          std::string failure;
          CompressJob(ThreadCctx(), *next, &frame, &failure);
          lock.lock();
          Complete(*next, &frame, &failure);
        }
        done_cv_.wait(lock, [&] { return job->done; });
        // The wait may have let Complete drop it (a result held too long, below): taken all the same.
        if (jobs_.erase(id) > 0) held_bytes_ -= job->output.size();
        out->swap(job->output);
        error->swap(job->error);
        return true;
      }
      queue_.erase(queued);
      jobs_.erase(id);
    }
    CompressJob(ThreadCctx(), *job, out, error);
    return true;
  }

  ~Compressor() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      cv_.notify_all();
    }
    for (std::thread& t : threads_) t.join();
  }

 private:
  // Compresses `job` through `c` (a thread's own context) into `out`, or sets `error`.
  static void CompressJob(ZSTD_CCtx* c, const Job& job, std::string* out, std::string* error) {
    size_t r = c ? ConfigureFrame(c, job.level) : 0;
    if (c && !ZSTD_isError(r) && job.dict && !job.dict->empty()) {
      ZSTD_CDict* cd = CachedCDict(job.dict->data(), job.dict->size(), job.level, job.dict_key);
      r = cd ? ZSTD_CCtx_refCDict(c, cd) : static_cast<size_t>(-ZSTD_error_memory_allocation);
    } else if (c && !ZSTD_isError(r) && job.prefix && !job.prefix->empty()) {
      r = ZSTD_CCtx_refPrefix_advanced(c, job.prefix->data(), job.prefix->size(), ZSTD_dct_rawContent);
    }
    if (!c) {
      *error = "zstd: out of memory";
    } else if (ZSTD_isError(r)) {
      *error = ZSTD_getErrorName(r);
    } else {
      out->resize(ZSTD_compressBound(job.input.size()));
      r = ZSTD_compress2(c, out->data(), out->size(), job.input.data(), job.input.size());
      if (ZSTD_isError(r)) *error = ZSTD_getErrorName(r);
      else out->resize(r);
      ZSTD_CCtx_refCDict(c, nullptr);
    }
  }

  void Run() {
    ZSTD_CCtx* c = ZSTD_createCCtx();
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        idle_++;
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        idle_--;
        if (stop_ && queue_.empty()) break;
        job = queue_.front();
        queue_.pop_front();
      }
      std::string out;
      std::string error;
      CompressJob(c, *job, &out, &error);
      std::lock_guard<std::mutex> lock(mu_);
      Complete(*job, &out, &error);
    }
    ZSTD_freeCCtx(c);
  }

  // Records `job`'s frame (or error), lets go of its input, and wakes whoever waits for it. Under mu_.
  void Complete(Job& job, std::string* out, std::string* error) {
    job.output.swap(*out);
    job.error.swap(*error);
    job.done = true;
    std::vector<uint8_t>().swap(job.input);
    job.dict.reset();
    job.prefix.reset();
    held_bytes_ += job.output.size();
    while ((jobs_.size() > kKeep || held_bytes_ > kKeepBytes) && jobs_.begin()->second->done) {
      held_bytes_ -= jobs_.begin()->second->output.size();
      jobs_.erase(jobs_.begin());
    }
    done_cv_.notify_all();
  }

  // `last`'s bytes if they equal `b`'s, else a new copy of `b` that becomes `last`. Under mu_.
  static SharedBytes Shared(SharedBytes& last, const Bytes& b) {
    if (last && last->size() == b.size && (b.size == 0 || std::memcmp(last->data(), b.data, b.size) == 0)) return last;
    last = std::make_shared<const std::vector<uint8_t>>(b.data, b.data + b.size);
    return last;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  // By job number. Results nobody takes (a writer whose transaction failed or was retried) are
  // dropped oldest first once more than kKeep jobs or kKeepBytes of finished frames are held.
  // A writer may still want a dropped result (a repack's batch had over 1,024 jobs running when
  // kKeep was 1,024): zstdCompressResult then returns undefined and the writer compresses again
  // itself, so a drop costs time, never a write. kKeepBytes holds a repack batch's frames twice
  // over (8 MiB of objects before compression) and bounds what a long-lived daemon keeps of
  // results nobody takes.
  std::map<uint64_t, std::shared_ptr<Job>> jobs_;
  static constexpr size_t kKeep = 8192;
  static constexpr size_t kKeepBytes = 16u << 20;
  // Bytes of the frames of finished jobs in jobs_.
  size_t held_bytes_ = 0;
  // $LAYERFS_ZSTD_THREADS sets the number (the bench's A/B of the rule).
  static size_t MaxThreads() {
    static const size_t n = [] {
      const char* v = getenv("LAYERFS_ZSTD_THREADS");
      const long set = v != nullptr ? std::strtol(v, nullptr, 10) : 0;
      if (set > 0) return std::min<size_t>(kMaxThreads, static_cast<size_t>(set));
      const size_t cores = std::thread::hardware_concurrency();
      // hardware_concurrency() may answer 0 (unknown): one thread then.
      return std::min<size_t>(kMaxThreads, cores > 1 ? cores - 1 : 1);
    }();
    return n;
  }
  static constexpr size_t kMaxThreads = 4;
  std::vector<std::thread> threads_;
  // Threads waiting for a job.
  size_t idle_ = 0;
  uint64_t next_ = 0;
  bool stop_ = false;
  // The dictionary and the prefix the last job that had one was given (Shared).
  SharedBytes last_dict_;
  std::string last_dict_key_;
  SharedBytes last_prefix_;
};

Compressor& Background() {
  // Never destroyed: it may be in use by any Node environment until the process exits.
  static Compressor* c = new Compressor();
  return *c;
}

// zstdCompressStart(data, level, dict?, prefix?, dictKey?) → job number (a dictionary or a
// prefix, not both; the dictionary's key as CachedCDict takes it)
Napi::Value CompressStart(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Bytes src = GetBytes(env, info[0], "data");
  if (!info[1].IsNumber()) throw Napi::TypeError::New(env, "level must be a number");
  Bytes dict{};
  Bytes prefix{};
  const bool withDict = info.Length() > 2 && !info[2].IsUndefined();
  const bool withPrefix = info.Length() > 3 && !info[3].IsUndefined();
  if (withDict && withPrefix) throw Napi::TypeError::New(env, "a dictionary or a prefix, not both");
  if (withDict) dict = GetBytes(env, info[2], "dict");
  if (withPrefix) prefix = GetBytes(env, info[3], "prefix");
  const std::string key = withDict ? DictKey(info, 4) : std::string();
  const uint64_t id = Background().Submit(src.data, src.size, info[1].As<Napi::Number>().Int32Value(), withDict ? &dict : nullptr, key, withPrefix ? &prefix : nullptr);
  return Napi::Number::New(env, static_cast<double>(id));
}

// zstdCompressResult(job) → Buffer (waits for it), or undefined for a job the Compressor no longer holds
Napi::Value CompressResult(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber()) throw Napi::TypeError::New(env, "job must be a number");
  std::string out;
  std::string error;
  if (!Background().Take(static_cast<uint64_t>(info[0].As<Napi::Number>().DoubleValue()), &out, &error)) return env.Undefined();
  if (!error.empty()) throw Napi::Error::New(env, "zstd compress: " + error);
  return Napi::Buffer<uint8_t>::Copy(env, reinterpret_cast<const uint8_t*>(out.data()), out.size());
}

// zstdCompress(data, level, prefix?) → Buffer
Napi::Value Compress(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Bytes src = GetBytes(env, info[0], "data");
  if (!info[1].IsNumber()) throw Napi::TypeError::New(env, "level must be a number");
  ZSTD_CCtx* c = ThreadCctx();
  if (!c) throw Napi::Error::New(env, "zstd: out of memory");
  ZstdCheck(env, ConfigureFrame(c, info[1].As<Napi::Number>().Int32Value()), "zstd parameters");
  if (info.Length() > 2 && !info[2].IsUndefined()) {
    Bytes prefix = GetBytes(env, info[2], "prefix");
    ZstdCheck(env, ZSTD_CCtx_refPrefix_advanced(c, prefix.data, prefix.size, ZSTD_dct_rawContent), "zstd prefix");
  }
  return CompressFrame(env, c, src);
}

// zstdDecompress(frame, size, prefix?) → Buffer of exactly `size` bytes (size -1: the size the
// frame header records, at most 64 MiB), or throws.
// This thread's decompression context, reset for a magicless frame, with argument `prefixArg`
// (when given) as its raw-content prefix. The prefix must outlive the decode.
ZSTD_DCtx* PrefixDctx(const Napi::CallbackInfo& info, size_t prefixArg) {
  Napi::Env env = info.Env();
  ZSTD_DCtx* d = ThreadDctx();
  if (!d) throw Napi::Error::New(env, "zstd: out of memory");
  ZSTD_DCtx_reset(d, ZSTD_reset_session_and_parameters);
  ZstdCheck(env, ZSTD_DCtx_setParameter(d, ZSTD_d_format, ZSTD_f_zstd1_magicless), "zstd format");
  if (info.Length() > prefixArg && !info[prefixArg].IsUndefined()) {
    Bytes prefix = GetBytes(env, info[prefixArg], "prefix");
    ZstdCheck(env, ZSTD_DCtx_refPrefix_advanced(d, prefix.data, prefix.size, ZSTD_dct_rawContent), "zstd prefix");
  }
  return d;
}

Napi::Value Decompress(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Bytes src = GetBytes(env, info[0], "frame");
  const size_t size = DecodedSize(env, src, info[1]);
  return DecompressFrame(env, PrefixDctx(info, 2), src, size);
}

// zstdDecompressInto(frame, out, size, prefix?) → the decoded size; decoded into `out` when it
// fits (DecompressFrameInto).
Napi::Value DecompressInto(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Bytes src = GetBytes(env, info[0], "frame");
  const size_t size = DecodedSize(env, src, info[2]);
  return DecompressFrameInto(env, PrefixDctx(info, 3), src, size, info[1]);
}

}  // namespace

void InitZstd(Napi::Env env, Napi::Object exports) {
  exports.Set("zstdCompress", Napi::Function::New(env, Compress, "zstdCompress"));
  exports.Set("zstdDecompress", Napi::Function::New(env, Decompress, "zstdDecompress"));
  exports.Set("zstdDecompressInto", Napi::Function::New(env, DecompressInto, "zstdDecompressInto"));
  exports.Set("zstdCompressStart", Napi::Function::New(env, CompressStart, "zstdCompressStart"));
  exports.Set("zstdCompressResult", Napi::Function::New(env, CompressResult, "zstdCompressResult"));
  exports.Set("zstdVersion", ZSTD_versionString());
  InitZstdDict(env, exports);
}

}  // namespace layerfs
